// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

//! Version, status names and struct layouts against the installed library.
use std::mem::size_of;

use kvrt::sys;

#[test]
fn library_version_equals_header_macros() {
    let v = unsafe { sys::kvrt_version() };
    assert_eq!(v, sys::KVRT_VERSION_NUMBER, "libkvrt {} vs kvrt-sys headers", kvrt::version_string());
    assert_eq!(kvrt::version(), kvrt::HEADER_VERSION);
    let (a, b, c) = kvrt::HEADER_VERSION;
    assert_eq!(kvrt::version_string(), format!("{a}.{b}.{c}"));
    kvrt::check_version().unwrap();
}

#[test]
fn status_names_come_from_the_library() {
    assert_eq!(kvrt::status_name(0), "KVRT_OK");
    assert_eq!(kvrt::status_name(sys::KVRT_ERR_CACHE_FULL), "KVRT_ERR_CACHE_FULL");
    assert_eq!(kvrt::status_name(-999), "KVRT_ERR_UNKNOWN");
    assert_eq!(kvrt::ErrorKind::from_status(-4), kvrt::ErrorKind::NotFound);
    assert_eq!(kvrt::ErrorKind::from_status(-77), kvrt::ErrorKind::Other(-77));
    assert_eq!(kvrt::ErrorKind::Other(-77).status(), -77);
}

/// Every hand-written struct has the size the C compiler gives it
/// (tests/bindings/abi_layout.c, written by the ctest bindings.install).
#[test]
fn struct_sizes_match_the_c_compiler() {
    let path = std::env::var("KVRT_ABI_LAYOUT")
        .expect("set KVRT_ABI_LAYOUT to the file tests/bindings/abi_layout.c prints (ctest sets it)");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let ours: &[(&str, usize)] = &[
        ("kvrt_cache_layer_config", size_of::<sys::kvrt_cache_layer_config>()),
        ("kvrt_cache_config", size_of::<sys::kvrt_cache_config>()),
        ("kvrt_cache_keys", size_of::<sys::kvrt_cache_keys>()),
        ("kvrt_cache_seq_info", size_of::<sys::kvrt_cache_seq_info>()),
        ("kvrt_cache_layer_info", size_of::<sys::kvrt_cache_layer_info>()),
        ("kvrt_cache_kind_stats", size_of::<sys::kvrt_cache_kind_stats>()),
        ("kvrt_cache_stats", size_of::<sys::kvrt_cache_stats>()),
        ("kvrt_model_config", size_of::<sys::kvrt_model_config>()),
        ("kvrt_model_info", size_of::<sys::kvrt_model_info>()),
        ("kvrt_chat_message", size_of::<sys::kvrt_chat_message>()),
        ("kvrt_context_config", size_of::<sys::kvrt_context_config>()),
        ("kvrt_request_stats", size_of::<sys::kvrt_request_stats>()),
        ("kvrt_sampler_config", size_of::<sys::kvrt_sampler_config>()),
        ("kvrt_generate_config", size_of::<sys::kvrt_generate_config>()),
        ("kvrt_ced_memory", size_of::<sys::kvrt_ced_memory>()),
        ("kvrt_sampler_stage", size_of::<sys::kvrt_sampler_stage>()),
        ("kvrt_context_activity", size_of::<sys::kvrt_context_activity>()),
        ("kvrt_tier_config", size_of::<sys::kvrt_tier_config>()),
        ("kvrt_tier_stats", size_of::<sys::kvrt_tier_stats>()),
    ];
    let mut seen = 0;
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(name), Some(size)) = (parts.next(), parts.next()) else { continue };
        if name == "version" {
            assert_eq!(size.parse::<u32>().unwrap(), sys::KVRT_VERSION_NUMBER, "KVRT_VERSION_NUMBER");
            continue;
        }
        let ours = ours.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("kvrt-sys lacks struct {name}"));
        assert_eq!(ours.1, size.parse::<usize>().unwrap(), "sizeof({name}) in Rust vs C");
        seen += 1;
    }
    assert_eq!(seen, ours.len(), "{path} lists {seen} structs, kvrt-sys declares {}", ours.len());
}

/// Send/Sync follow the headers: models and caches are shareable, contexts,
/// samplers and layouts move between threads but are used by
/// one at a time (not Sync). The !Sync half is a compile-time check: the
/// method call below is ambiguous (does not compile) if the type is Sync.
#[test]
fn send_and_sync_follow_the_headers() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send_sync::<kvrt::Model>();
    send_sync::<kvrt::Cache>();
    send::<kvrt::Context>();
    send::<kvrt::Sampler>();
    send::<kvrt::Layout>();

    trait AmbiguousIfSync<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfSync<()> for T {}
    impl<T: ?Sized + Sync> AmbiguousIfSync<u8> for T {}
    <kvrt::Context as AmbiguousIfSync<_>>::check();
    <kvrt::Sampler as AmbiguousIfSync<_>>::check();
    <kvrt::Layout as AmbiguousIfSync<_>>::check();
}
