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
