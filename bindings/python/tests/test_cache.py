# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

import threading

import pytest

import kvrt


@pytest.fixture
def cache():
    with kvrt.Layout(4) as layout:
        assert layout.add_layers(2, 8, count=2) == 0
        assert layout.n_layers == 2
        c = kvrt.Cache(layout, budget_bytes=1 << 20)
    yield c
    c.close()


def test_prefix_sharing_and_rows(cache):
    tokens = list(range(10))
    a = cache.seq_create()
    cache.seq_append(a, tokens)
    rb = cache.layer_info(0)["row_bytes"]
    rows = bytes([5]) * (10 * rb)
    for layer in range(2):
        cache.write_rows(a, layer, 0, 10, rows, rows)
    cache.seq_mark_computed(a, 10)
    assert cache.lookup_prefix(tokens) == 8
    assert cache.lookup_prefix(tokens, salt=b"other") == 0
    b = cache.seq_create()
    assert cache.seq_match_prefix(b, tokens) == 8
    k, v = bytearray(8 * rb), bytearray(8 * rb)
    cache.read_rows(b, 1, 0, 8, k, v)
    assert set(k) == {5} and set(v) == {5}
    assert cache.seq_info(b) == {"length": 8, "computed": 8, "n_blocks": 2, "bytes": cache.seq_info(b)["bytes"],
                                 "is_pin": False}
    st = cache.stats()
    assert st["n_sequences"] == 2 and st["hit_tokens"] == 8 and st["block_tokens"] == 4


def test_sub_block_hit_reaches_the_first_changed_token(cache):
    tokens = list(range(10))
    a = cache.seq_create()
    cache.seq_append(a, tokens)
    cache.seq_mark_computed(a, 10)
    edited = list(tokens)
    edited[6] = 99  # inside the second block of 4
    assert cache.lookup_prefix(edited) == 4
    assert cache.lookup_prefix(edited, sub_block=True) == 6
    b = cache.seq_create()
    assert cache.seq_match_prefix(b, edited, sub_block=True) == 6
    assert cache.seq_info(b)["length"] == 6
    with pytest.raises(kvrt.KvrtError) as ei:
        cache.seq_match_prefix(b, edited, sub_block=True)
    assert ei.value.status is kvrt.Status.INVALID_STATE


def test_errors_carry_status_and_message(cache):
    with pytest.raises(kvrt.KvrtError) as ei:
        cache.seq_release(777)
    assert ei.value.status is kvrt.Status.NOT_FOUND
    assert ei.value.message and str(ei.value).startswith("KVRT_ERR_NOT_FOUND: ")
    with pytest.raises(kvrt.KvrtError) as ei:
        kvrt.Layout(0)
    assert ei.value.status is kvrt.Status.INVALID_ARGUMENT
    seq = cache.seq_create()
    cache.seq_append(seq, [1, 2])
    with pytest.raises(kvrt.KvrtError) as ei:
        cache.write_rows(seq, 0, 0, 2, b"abc", b"abc")
    assert ei.value.status is kvrt.Status.INVALID_ARGUMENT
    with pytest.raises(kvrt.KvrtError) as ei:
        cache.seq_truncate(seq, 9)
    assert ei.value.status is kvrt.Status.OUT_OF_RANGE
    with pytest.raises(kvrt.KvrtError) as ei:
        cache.seq_load("/nonexistent/kvrt.state")
    assert ei.value.status is kvrt.Status.NOT_FOUND


def test_use_after_close_is_refused_and_double_close_harmless(cache):
    cache.close()
    cache.close()
    assert cache.closed
    with pytest.raises(kvrt.ClosedError) as ei:
        cache.seq_create()
    assert ei.value.status is kvrt.Status.BAD_HANDLE
    layout = kvrt.Layout(16)
    layout.close()
    with pytest.raises(kvrt.ClosedError):
        layout.add_layers(1, 8)
    with pytest.raises(kvrt.ClosedError):
        kvrt.Cache(layout)


def test_state_file_round_trip(cache, tmp_path):
    seq = cache.seq_create()
    cache.seq_append(seq, list(range(100, 108)))
    rb = cache.layer_info(0)["row_bytes"]
    for layer in range(2):
        cache.write_rows(seq, layer, 0, 8, bytes(8 * rb), bytes(8 * rb))
    cache.seq_mark_computed(seq, 8)
    path = tmp_path / "seq.state"
    cache.seq_save(seq, path)
    loaded = cache.seq_load(path)
    assert cache.seq_info(loaded)["length"] == 8
    with pytest.raises(kvrt.KvrtError) as ei:
        cache.seq_load(path, fingerprint=(1, 2))
    assert ei.value.status is kvrt.Status.MISMATCH


def test_cache_from_many_threads():
    # 64 MiB budget: each thread's mimalloc heap takes whole 32 MiB segments of
    # the cache's arena (2 x budget + 64 MiB), so a 1 MiB cache cannot serve 4
    # threads (a cache bug, reported; not the binding's).
    with kvrt.Layout(4) as layout:
        layout.add_layers(2, 8, count=2)
        cache = kvrt.Cache(layout, budget_bytes=64 << 20)
    errors = []

    def work(t):
        try:
            for i in range(50):
                s = cache.seq_create()
                cache.seq_append(s, [t, i])
                cache.seq_release(s)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.stats()["n_sequences"] == 0
    cache.close()


def test_rows_of_a_layer_whose_v_type_differs():
    # K in f32, V in f16: each side's buffer is sized by its own row size.
    with kvrt.Layout(4) as layout:
        layout.add_layers(2, 32, dtype=kvrt.DTYPE_F32, v_dtype=kvrt.DTYPE_F16)
        c = kvrt.Cache(layout, budget_bytes=1 << 20)
    try:
        info = c.layer_info(0)
        kb, vb = info["row_bytes"], info["v_row_bytes"]
        assert kb == 2 * vb
        s = c.seq_create()
        c.seq_append(s, list(range(6)))
        c.write_rows(s, 0, 0, 6, bytes([1]) * (6 * kb), bytes([2]) * (6 * vb))
        k, v = bytearray(6 * kb), bytearray(6 * vb)
        c.read_rows(s, 0, 0, 6, k, v)
        assert set(k) == {1} and set(v) == {2}
        with pytest.raises(kvrt.KvrtError):  # a V buffer of K's size is refused before any copy
            c.read_rows(s, 0, 0, 6, bytearray(6 * kb), bytearray(6 * kb))
    finally:
        c.close()
