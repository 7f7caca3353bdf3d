//! The CED generator: a tiny model file is written; bad options are refused.
use kvrt::ced::{param_count, write_gguf, CedOptions};
use kvrt::ErrorKind;

#[test]
fn writes_a_tiny_model() {
    let o = CedOptions::default();
    let n = param_count(&o).unwrap();
    assert!(n > 0);
    let path = std::env::temp_dir().join(format!("kvrt-rust-ced-{}.gguf", std::process::id()));
    write_gguf(&path, &o).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len >= 4 * n, "f32 file of {n} parameters has only {len} bytes");
    assert_eq!(&std::fs::read(&path).unwrap()[..4], b"GGUF");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn rejects_bad_options() {
    let e = param_count(&CedOptions { preset: "huge".into(), ..Default::default() }).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(!e.message().is_empty());
    let e = param_count(&CedOptions { preset: "ti\0ny".into(), ..Default::default() }).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = write_gguf("/nonexistent-dir/x.gguf", &CedOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
}

#[test]
fn runs_a_tiny_ced_model_with_prefix_reuse() {
    use kvrt::ced::{CedModel, CedSession, CedSessionOptions, PrefillMode, Resume};
    let path = std::env::temp_dir().join(format!("kvrt-rust-ced-run-{}.gguf", std::process::id()));
    write_gguf(&path, &CedOptions::default()).unwrap();
    let model = CedModel::load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let mem = model.memory().unwrap();
    assert!(mem.n_layers > 0 && mem.n_sources > 0 && mem.global_bytes_per_token > 0.0);
    let src = model.source(0).unwrap();
    assert!(src.ratio >= 1);
    assert_eq!(model.source(mem.n_sources).unwrap_err().kind(), ErrorKind::OutOfRange);

    let mut s = CedSession::new(&model, &CedSessionOptions::default()).unwrap();
    let tokens: Vec<i32> = (0..40).map(|i| (i * 7 + 3) % 50).collect();
    let a = s.seq_create().unwrap();
    let info = s.prefill(a, &tokens, PrefillMode::Exact, Resume::Auto).unwrap();
    assert_eq!(info.hit, 0);
    assert_eq!(s.seq_length(a).unwrap(), 40);
    let logits = s.logits(a).unwrap();
    assert!(!logits.is_empty() && logits.iter().all(|x| x.is_finite()));
    s.extend(a, &[5]).unwrap();
    assert_eq!(s.seq_length(a).unwrap(), 41);
    let b = s.seq_create().unwrap();
    let info = s.prefill(b, &tokens, PrefillMode::Exact, Resume::Auto).unwrap();
    assert!(info.hit > 0, "the second identical prompt reuses cached banks: {info:?}");
    let (bpt, bank, _window) = s.bytes().unwrap();
    assert_eq!(bpt, mem.global_bytes_per_token);
    assert!(bank > 0);
    let e = s.prefill(b, &tokens, PrefillMode::Exact, Resume::Auto).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidState);
    let c = s.seq_create().unwrap();
    let e = s.prefill(c, &[1 << 30], PrefillMode::Ced, Resume::Cold).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfRange);
    assert_eq!(s.seq_length(c).unwrap(), 0, "a failed prefill leaves the sequence empty");
    assert_eq!(s.seq_release(999_999).unwrap_err().kind(), ErrorKind::NotFound);
    let f = s.seq_fork(a).unwrap();
    assert_eq!(s.seq_length(f).unwrap(), 41);
    let e = CedModel::load("/nonexistent/ced.gguf").err().unwrap();
    assert!(matches!(e.kind(), ErrorKind::NotFound | ErrorKind::Io), "{e}");
}
