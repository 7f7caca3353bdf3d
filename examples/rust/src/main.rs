// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! kvrt from Rust: one document, two questions. The second question's prompt
//! shares the system prompt and the document with the first, so kvrt reuses
//! their K/V from the prefix cache instead of recomputing them.
//!
//!     PKG_CONFIG_PATH=<prefix>/lib/pkgconfig cargo run [-- model.gguf]
//!
//! Exits non-zero if the second question reused nothing.
use std::io::Write;
use std::path::PathBuf;

use kvrt::{ChatMessage, Context, ContextOptions, GenerateOptions, Model, TokenizeFlags};

const DOCUMENT: &str = "The Harbour Street Bakery opened in 1987 in the old customs house of Port Ellen. \
It was founded by two sisters, Morag and Isla Campbell, who had trained as pastry cooks in Glasgow. \
The bakery bakes every night from two until six in the morning in a wood-fired oven built in 1902. \
Its most popular bread is a dark rye loaf with caraway seeds, and on Saturdays it sells \
more than four hundred cinnamon buns. In 2015 the bakery won the Scottish Baker of the Year award. \
It employs eleven people and closes every year for the first two weeks of January.";

const QUESTIONS: [&str; 2] = ["When did the bakery open, and who founded it?", "What is the bakery's most popular bread?"];

fn model_path() -> PathBuf {
    if let Some(arg) = std::env::args_os().nth(1) {
        return arg.into();
    }
    if let Some(p) = std::env::var_os("KVRT_MODEL") {
        return p.into();
    }
    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    kvrt::check_version()?;
    let model = Model::load(model_path())?;
    let mut ctx = Context::new(&model, &ContextOptions { n_ctx: 1024, n_seq_max: 2, ..Default::default() })?;
    let mut last = None;
    for (q, question) in QUESTIONS.iter().enumerate() {
        let user = format!("Document:\n{DOCUMENT}\n\nQuestion: {question}");
        let text = model.chat_apply(
            &[
                ChatMessage { role: "system", content: "Answer the question using only the document. Be brief." },
                ChatMessage { role: "user", content: &user },
            ],
            true,
        )?;
        let prompt = model.tokenize(&text, TokenizeFlags::CHAT)?;
        print!("Q{}: {question}\nA{}: ", q + 1, q + 1);
        let mut print_piece = |_token: i32, piece: &str| {
            print!("{piece}");
            let _ = std::io::stdout().flush();
            true
        };
        let s = ctx.generate(q as i32, &prompt, &GenerateOptions { max_tokens: 24, ..Default::default() }, None,
                             Some(&mut print_piece))?;
        println!(
            "\n   prompt {} tokens: reused {} (from the prefix cache {}), computed {}; generated {} tokens, {:.1} tokens/s",
            s.prompt_tokens, s.reused_tokens, s.reused_from_cache, s.computed_tokens, s.generated_tokens,
            s.decode_tokens_per_s
        );
        last = Some(s);
    }
    let s = last.unwrap();
    println!("second question: reused {} of {} prompt tokens from the prefix cache", s.reused_from_cache, s.prompt_tokens);
    if s.reused_from_cache == 0 {
        return Err("expected the shared document to come from the prefix cache".into());
    }
    Ok(())
}
