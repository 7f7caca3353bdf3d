// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! The embedder's API: a Context owning its Model, cancellation from another thread,
//! activity, generate into buffers, the token iterator, sampler chains, the chat
//! template override, memory control, logging and the ISA level.
#![cfg(feature = "runtime")]
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use kvrt::{ChatMessage, Context, ContextOptions, ErrorKind, GenerateOptions, GenerateOutput, Model, Sampler, Stage,
           StopReason, TokenizeFlags};

fn load() -> Model {
    let p = std::env::var_os("KVRT_MODEL").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    });
    Model::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn opts() -> ContextOptions {
    ContextOptions { n_ctx: 256, n_threads: 2, ..Default::default() }
}

/// A model and its context in one struct: the context owns a handle of the model.
struct App {
    ctx: Context,
}

#[test]
fn context_owns_its_model_and_generates_into_buffers_and_an_iterator() {
    let app = {
        let model = load();
        App { ctx: Context::new(&model, &opts()).unwrap() } // `model` is dropped here
    };
    let mut app = app;
    let prompt = app.ctx.model().tokenize("The capital of France is", TokenizeFlags::default()).unwrap();
    let go = GenerateOptions { max_tokens: 8, stop_at_eog: false, ..Default::default() };
    let mut pieces = String::new();
    let mut streamed = Vec::new();
    let mut cb = |t: i32, s: &str| {
        pieces.push_str(s);
        if t >= 0 {
            streamed.push(t);
        }
        true
    };
    app.ctx.generate(0, &prompt, &go, None, Some(&mut cb)).unwrap();
    let mut out = GenerateOutput::default();
    let st = app.ctx.generate_into(0, &prompt, &go, None, None, Some(&mut out)).unwrap();
    assert_eq!(st.generated_tokens, 8);
    assert_eq!(out.tokens, streamed);
    assert_eq!(out.text, pieces);
    // The iterator: the same tokens and text.
    let got: Vec<_> = app.ctx.tokens(0, &prompt, 8, None).unwrap().collect::<kvrt::Result<_>>().unwrap();
    assert_eq!(got.iter().filter(|t| t.id >= 0).map(|t| t.id).collect::<Vec<_>>(), streamed);
    assert_eq!(got.iter().map(|t| t.text.as_str()).collect::<String>(), pieces);
    // A second handle of the model, independent of the first.
    let m2 = app.ctx.model().clone();
    assert_eq!(m2.info().unwrap().n_vocab, 49152);
}

#[test]
fn cancel_from_another_thread() {
    let model = load();
    let mut ctx = Context::new(&model, &opts()).unwrap();
    let prompt = model.tokenize("The capital of France is", TokenizeFlags::default()).unwrap();
    let handle = ctx.cancel_handle();
    let seen = Arc::new(Mutex::new(None));
    let mut n = 0;
    let mut cb = |_t: i32, _s: &str| {
        n += 1;
        if n == 3 {
            let seen = seen.clone();
            std::thread::spawn(move || {
                *seen.lock().unwrap() = Some(handle.activity().unwrap());
                handle.cancel().unwrap();
            })
            .join()
            .unwrap();
        }
        true
    };
    let go = GenerateOptions { max_tokens: 50, stop_at_eog: false, ..Default::default() };
    let e = ctx.generate(0, &prompt, &go, None, Some(&mut cb)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    assert_eq!(n, 3);
    let a = seen.lock().unwrap().expect("the other thread read the activity");
    assert_eq!((a.phase, a.generated_tokens), (kvrt::sys::KVRT_PHASE_DECODE, 3));
    assert_eq!(ctx.seq_length(0).unwrap(), prompt.len() + 2);
    let st = ctx.generate(0, &prompt, &GenerateOptions { max_tokens: 2, ..Default::default() }, None, None).unwrap();
    assert!(matches!(st.stop_reason, StopReason::MaxTokens | StopReason::EndOfGeneration));
    drop(ctx);
    assert_eq!(handle.cancel().unwrap_err().kind(), ErrorKind::BadHandle); // after the drop: checked
}

#[test]
fn sampler_chain_penalties_and_bias() {
    let mut s = Sampler::chain(1).unwrap();
    s.add(Stage::Penalties { last_n: 64, repeat: 2.0, frequency: 0.0, presence: 0.0 }).unwrap();
    s.add(Stage::Greedy).unwrap();
    assert_eq!(s.sample(&[1.0, 3.0, 2.5]).unwrap(), 1);
    s.accept(1).unwrap();
    assert_eq!(s.sample(&[1.0, 3.0, 2.5]).unwrap(), 2); // 3 / 2 < 2.5
    assert_eq!(s.add(Stage::TopK(3)).err().map(|e| e.kind()), Some(ErrorKind::InvalidState));
    let mut b = Sampler::chain(0).unwrap();
    b.add(Stage::LogitBias(vec![(2, 5.0)])).unwrap();
    assert_eq!(b.sample(&[0.0, 1.0, 0.0]).unwrap(), 2);
    assert_eq!(Sampler::chain(0).unwrap().add(Stage::TopP(0.0)).err().map(|e| e.kind()), Some(ErrorKind::InvalidArgument));
}

#[test]
fn chat_template_memory_logging_isa() {
    let model = load();
    let msgs = [ChatMessage { role: "user", content: "Hi" }];
    assert_eq!(model.chat_apply_template(&msgs, false, "chatml").unwrap(), "<|im_start|>user\nHi<|im_end|>\n");
    assert_eq!(model.chat_apply_template(&msgs, true, "{{ x }}").unwrap_err().kind(), ErrorKind::Unsupported);
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let l2 = lines.clone();
    kvrt::set_log_callback(Some(Box::new(move |_lvl, m| l2.lock().unwrap().push(m.to_string()))),
                           kvrt::sys::KVRT_LOG_INFO)
        .unwrap();
    let mut ctx = Context::new(&model, &opts()).unwrap();
    kvrt::set_log_callback(None, kvrt::sys::KVRT_LOG_NONE).unwrap();
    assert!(lines.lock().unwrap().iter().any(|m| m.contains("cache: budget")), "{:?}", lines.lock().unwrap());
    let prompt = model
        .tokenize("Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma",
                  TokenizeFlags::default())
        .unwrap();
    ctx.prefill(0, &prompt).unwrap();
    ctx.seq_release(0).unwrap();
    let cached = ctx.cache_stats().unwrap().bytes_cached;
    assert!(cached > 0);
    assert_eq!(ctx.cache_trim(0).unwrap(), cached);
    ctx.prefill(0, &prompt).unwrap();
    let used = ctx.cache_stats().unwrap().bytes_in_use;
    assert_eq!(ctx.cache_set_budget(used - 1).unwrap_err().kind(), ErrorKind::InvalidState);
    let (active, detected) = kvrt::isa_get().unwrap();
    assert_eq!(active, detected);
    assert_eq!(kvrt::isa_name(kvrt::sys::KVRT_ISA_AVX2), "avx2");
    assert_eq!(kvrt::isa_name(kvrt::sys::KVRT_ISA_AMX), "amx");
    assert!(detected <= kvrt::sys::KVRT_ISA_AMX);
    assert_eq!(kvrt::isa_set(42).unwrap_err().kind(), ErrorKind::InvalidArgument);
}
