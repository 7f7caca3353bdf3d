// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! Model, context, sampler and generation on the real model
//! ($KVRT_MODEL or ~/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf).
#![cfg(feature = "runtime")]

use kvrt::{ChatMessage, Context, ContextOptions, ErrorKind, GenerateOptions, Model, ModelOptions, Sampler,
           SamplerOptions, StopReason, TokenizeFlags};

mod support;
#[allow(unused_imports)]
use support::{model, model_path};


fn small_ctx(m: &Model) -> Context {
    Context::new(m, &ContextOptions { n_ctx: 512, n_seq_max: 2, n_threads: 2, ..Default::default() }).unwrap()
}

#[test]
fn bad_model_path_is_an_error_with_kvrt_message() {
    let e = Model::load("/nonexistent/model.gguf").err().expect("loading a missing file must fail");
    assert!(matches!(e.kind(), ErrorKind::Io | ErrorKind::NotFound), "{e}");
    assert!(e.message().contains("nonexistent"), "the message names the file: {}", e.message());
    let not_gguf = std::env::temp_dir().join(format!("kvrt-rust-bad-{}.gguf", std::process::id()));
    std::fs::write(&not_gguf, b"this is not a gguf file at all, not even close").unwrap();
    let e = Model::load(&not_gguf).err().expect("a non-GGUF file must fail");
    assert_eq!(e.kind(), ErrorKind::BadFormat, "{e}");
    std::fs::remove_file(&not_gguf).unwrap();
}

#[test]
fn progress_can_cancel_and_panics_do_not_cross_c() {
    let mut calls = 0;
    let mut cancel = |_f: f32, _stage: &str| {
        calls += 1;
        false
    };
    let e = Model::load_with(model_path(), ModelOptions { progress: Some(&mut cancel), ..Default::default() })
        .err()
        .expect("cancelled load");
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    assert!(calls >= 1);
    let mut boom = |_f: f32, _stage: &str| -> bool { panic!("boom in progress") };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = Model::load_with(model_path(), ModelOptions { progress: Some(&mut boom), ..Default::default() });
    }));
    let payload = r.expect_err("the panic is resumed in Rust after kvrt returned");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom in progress"));
}

#[test]
fn info_tokenizer_and_chat() {
    let m = model();
    let info = m.info().unwrap();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.n_vocab, 49152);
    assert_eq!(info.n_layers, 30);
    assert_ne!(info.fingerprint, [0u8; 16]);
    let toks = m.tokenize("The sky is", TokenizeFlags::default()).unwrap();
    assert_eq!(toks, vec![504, 6376, 314]);
    assert_eq!(m.detokenize(&toks, false).unwrap(), "The sky is");
    let e = m.detokenize(&[1 << 30], false).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfRange);
    assert!(m.token_is_eog(info.eos_token.unwrap()).unwrap());
    assert!(!m.token_is_eog(504).unwrap());
    let text = m.chat_apply(&[ChatMessage { role: "user", content: "Hi" }], true).unwrap();
    assert!(text.contains("<|im_start|>user\nHi<|im_end|>"), "{text}");
    assert!(text.ends_with("<|im_start|>assistant\n"), "{text}");
    assert!(m.meta("general.architecture").unwrap() == "llama");
    assert_eq!(m.meta("no.such.key").unwrap_err().kind(), ErrorKind::NotFound);
    assert!(m.meta_keys().unwrap().iter().any(|k| k == "general.architecture"));
    let tensors = m.tensors().unwrap();
    assert!(tensors.iter().any(|t| t.name == "token_embd.weight" && t.n_elements > 0));
}

#[test]
fn prefill_logits_decode_and_prefix_reuse() {
    let m = model();
    let mut ctx = small_ctx(m);
    let doc: String = "Lighthouses guide ships along dangerous coasts. ".repeat(8);
    let a = m.tokenize(&format!("{doc}Question one?"), TokenizeFlags::default()).unwrap();
    let b = m.tokenize(&format!("{doc}Question two?"), TokenizeFlags::default()).unwrap();
    let s = ctx.prefill(0, &a).unwrap();
    assert_eq!(s.prompt_tokens as usize, a.len());
    assert_eq!(s.computed_tokens as usize, a.len());
    let logits = ctx.logits(0).unwrap();
    assert_eq!(logits.len(), 49152);
    assert!(logits.iter().all(|x| x.is_finite()));
    let mut buf = vec![0f32; 10];
    assert_eq!(ctx.logits_into(0, &mut buf).unwrap_err().kind(), ErrorKind::BufferTooSmall);
    let s = ctx.prefill(1, &b).unwrap();
    assert!(s.reused_from_cache >= 16, "the shared document is reused: {s:?}");
    assert_eq!(s.reused_tokens + s.computed_tokens, b.len() as u64);
    assert!(ctx.seq_kv_bytes(1).unwrap() > 0);
    let next = logits.iter().enumerate().max_by(|x, y| x.1.total_cmp(y.1)).unwrap().0 as i32;
    ctx.decode(&[0], &[next]).unwrap();
    assert_eq!(ctx.seq_length(0).unwrap(), a.len() + 1);
    ctx.seq_release(0).unwrap();
    assert_eq!(ctx.seq_length(0).unwrap(), 0);
    assert_eq!(ctx.logits(0).unwrap_err().kind(), ErrorKind::InvalidState);
    assert_eq!(ctx.prefill(7, &a).unwrap_err().kind(), ErrorKind::OutOfRange);
    assert_eq!(ctx.prefill(0, &[]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(ctx.prefill(0, &[-5]).unwrap_err().kind(), ErrorKind::OutOfRange);
    assert!(ctx.cache_stats().unwrap().hit_tokens >= 16);
    // A second context shares the first one's prefix cache.
    let mut other = Context::new_sharing_cache(m, &ContextOptions { n_ctx: 512, n_threads: 2, ..Default::default() }, &ctx).unwrap();
    let s = other.prefill(0, &a).unwrap();
    assert!(s.reused_from_cache >= 16, "{s:?}");
}

#[test]
fn prefill_batch_matches_prefill_alone() {
    let m = model();
    let mut ctx = small_ctx(m);
    let a = m.tokenize("The capital of France is", TokenizeFlags::default()).unwrap();
    let b = m.tokenize("def add(a, b):\n    return", TokenizeFlags::default()).unwrap();
    let stats = ctx.prefill_batch(&[(0, &a[..]), (1, &b[..])]).unwrap();
    assert_eq!(stats.len(), 2);
    assert_eq!(stats[1].prompt_tokens as usize, b.len());
    let batched = ctx.logits(1).unwrap();
    let mut alone = small_ctx(m);
    alone.prefill(0, &b).unwrap();
    assert!(batched.iter().zip(alone.logits(0).unwrap()).all(|(x, y)| x.to_bits() == y.to_bits()));
    // A repeated sequence is refused before anything changes.
    assert_eq!(ctx.prefill_batch(&[(0, &b[..]), (0, &a[..])]).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(ctx.seq_length(0).unwrap(), a.len());
    assert_eq!(ctx.prefill_batch(&[]).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn generate_streams_and_callbacks_cannot_unwind_into_c() {
    let m = model();
    let mut ctx = small_ctx(m);
    let text = m.chat_apply(&[ChatMessage { role: "user", content: "What is the capital of France?" }], true).unwrap();
    let prompt = m.tokenize(&text, TokenizeFlags::CHAT).unwrap();
    let mut out = String::new();
    let mut streamed = Vec::new();
    let mut on_token = |t: i32, piece: &str| {
        out.push_str(piece);
        if t >= 0 {
            streamed.push(t); // -1: a final flush of held-back text
        }
        true
    };
    let opts = GenerateOptions { max_tokens: 8, ..Default::default() };
    let s = ctx.generate(0, &prompt, &opts, None, Some(&mut on_token)).unwrap();
    assert!(s.generated_tokens >= 1 && s.generated_tokens <= 8);
    assert!(s.sample_s > 0.0 && s.sample_s < 60.0, "the sampler's time (0.5): {s:?}");
    assert!(matches!(s.stop_reason, StopReason::MaxTokens | StopReason::EndOfGeneration), "{s:?}");
    assert_eq!(streamed.len() as u64, s.generated_tokens);
    assert_eq!(out, m.detokenize(&streamed, false).unwrap(), "the streamed text is the tokens' text");
    // Greedy is deterministic, and the answer's K/V are reused by the next turn.
    let mut again = String::new();
    let mut on_again = |_t: i32, piece: &str| {
        again.push_str(piece);
        true
    };
    let s2 = ctx.generate(0, &prompt, &opts, None, Some(&mut on_again)).unwrap();
    assert_eq!(again, out);
    assert!(s2.reused_tokens as usize + 1 >= prompt.len(), "the same prompt is kept: {s2:?}");

    let mut stop_after_two = {
        let mut k = 0;
        move |_t: i32, _p: &str| {
            k += 1;
            k < 2
        }
    };
    let s = ctx.generate(0, &prompt, &opts, None, Some(&mut stop_after_two)).unwrap();
    assert_eq!(s.stop_reason, StopReason::Callback);

    let mut sampler = Sampler::new(&SamplerOptions { temperature: 0.8, top_k: 40, seed: 7, ..Default::default() }).unwrap();
    let s = ctx.generate(1, &prompt, &opts, Some(&mut sampler), None).unwrap();
    assert!(s.generated_tokens >= 1);
    let e = Sampler::new(&SamplerOptions { temperature: 1.0, top_p: 2.0, ..Default::default() }).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);

    let mut boom = |_t: i32, _p: &str| -> bool { panic!("boom in on_token") };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = ctx.generate(0, &prompt, &opts, None, Some(&mut boom));
    }));
    assert_eq!(r.expect_err("resumed").downcast_ref::<&str>(), Some(&"boom in on_token"));
    // The context still works after the panic was carried across.
    ctx.prefill(0, &prompt).unwrap();
}
