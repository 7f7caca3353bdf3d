# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The kvrt authors

"""A loaded model (kvrt/model.h): immutable, usable from many threads."""
import ctypes
import os

from . import _capi as C
from ._handle import Callback, Handle, create, read_text
from .errors import check

TOKENIZE_ADD_BOS = 1
TOKENIZE_PARSE_SPECIAL = 2


class Model(Handle):
    """Model(path, n_threads=0, progress=None): loads a GGUF file.

    progress(fraction, stage) -> False cancels the load (KvrtError with
    Status.CANCELLED); an exception raised inside it cancels the load and is
    re-raised here. close() drops this handle's reference: contexts keep the
    weights alive.
    """
    _destroy = "kvrt_model_destroy"

    def __init__(self, path, n_threads=0, progress=None):
        self._ptr = None
        cfg = C.init_struct(C.model_config, "kvrt_model_config_init")
        cfg.n_threads = n_threads
        cb = None
        if progress is not None:
            cb = Callback(lambda f, stage: progress(f, stage.decode() if stage else ""))
            cfg.progress = C.progress_fn(lambda f, stage, _ud: cb.invoke(f, stage))
        try:
            ptr = create(C.lib().kvrt_model_load, os.fsencode(path), ctypes.byref(cfg))
        finally:
            if cb is not None:
                cb.reraise()
        super().__init__(ptr)

    def retain(self):
        """Another Model handle of the same loaded weights (kvrt_model_retain): no copy,
        closed independently."""
        m = Model.__new__(Model)
        Handle.__init__(m, create(C.lib().kvrt_model_retain, self._p))
        return m

    def info(self):
        """kvrt_model_info as a dict (strings decoded, fingerprint as bytes)."""
        i = C.init_struct(C.model_info, "kvrt_model_info_init")
        check(C.lib().kvrt_model_get_info(ctypes.byref(i), self._p))
        out = {n: getattr(i, n) for n, _ in C.model_info._fields_ if n != "struct_size"}
        out["architecture"] = (i.architecture or b"").decode()
        out["name"] = (i.name or b"").decode()
        out["fingerprint"] = bytes(i.fingerprint)
        return out

    def ced_memory(self, dtype):
        """KV memory of a CED model whose cached rows are of element type `dtype`
        (kvrt.DTYPE_F32, DTYPE_F16 or DTYPE_BF16), as a dict of kvrt_ced_memory's fields.
        KvrtError UNSUPPORTED for a model of another architecture."""
        m = C.init_struct(C.ced_memory, "kvrt_ced_memory_init")
        check(C.lib().kvrt_ced_memory_get(ctypes.byref(m), self._p, dtype))
        return {n: getattr(m, n) for n, _ in C.ced_memory._fields_ if n != "struct_size"}

    def ced_source(self, index, dtype):
        """Bank `index` of a CED model at element type `dtype`: a dict of layer, ratio,
        main_bytes_per_token, indexer_bytes_per_token. KvrtError OUT_OF_RANGE past the last bank."""
        layer, ratio = ctypes.c_int32(), ctypes.c_int32()
        main, idx = ctypes.c_double(), ctypes.c_double()
        check(C.lib().kvrt_ced_memory_source(ctypes.byref(layer), ctypes.byref(ratio), ctypes.byref(main),
                                             ctypes.byref(idx), self._p, index, dtype))
        return {"layer": layer.value, "ratio": ratio.value, "main_bytes_per_token": main.value,
                "indexer_bytes_per_token": idx.value}

    def meta(self, key):
        """A GGUF metadata value as text; KvrtError NOT_FOUND for a missing key."""
        k = key.encode()
        return read_text(lambda d, c, w: C.lib().kvrt_model_meta_string(d, c, w, self._p, k)).decode()

    def meta_keys(self):
        n = ctypes.c_size_t()
        check(C.lib().kvrt_model_meta_count(ctypes.byref(n), self._p))
        return [read_text(lambda d, c, w, i=i: C.lib().kvrt_model_meta_key(d, c, w, self._p, i)).decode()
                for i in range(n.value)]

    def tensors(self):
        """[(name, type name, elements, bytes)] for every tensor."""
        n = ctypes.c_size_t()
        check(C.lib().kvrt_model_tensor_count(ctypes.byref(n), self._p))
        out = []
        for i in range(n.value):
            tname, ne, nb = ctypes.c_char_p(), ctypes.c_uint64(), ctypes.c_uint64()
            name = read_text(lambda d, c, w, i=i: C.lib().kvrt_model_tensor_info(
                d, c, w, ctypes.byref(tname), ctypes.byref(ne), ctypes.byref(nb), self._p, i))
            out.append((name.decode(), (tname.value or b"").decode(), ne.value, nb.value))
        return out

    def tokenize(self, text, add_bos=False, parse_special=False):
        """UTF-8 text (str or bytes) to a list of token ids."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        flags = (TOKENIZE_ADD_BOS if add_bos else 0) | (TOKENIZE_PARSE_SPECIAL if parse_special else 0)
        n = ctypes.c_size_t()
        lib = C.lib()
        check(lib.kvrt_model_tokenize(None, 0, ctypes.byref(n), self._p, data, len(data), flags))
        buf = (ctypes.c_int32 * max(n.value, 1))()
        check(lib.kvrt_model_tokenize(buf, len(buf), ctypes.byref(n), self._p, data, len(data), flags))
        return list(buf[:n.value])

    def detokenize_bytes(self, tokens, special=False):
        arr = (ctypes.c_int32 * len(tokens))(*tokens)
        return read_text(lambda d, c, w: C.lib().kvrt_model_detokenize(d, c, w, self._p, arr, len(tokens),
                                                                       1 if special else 0))

    def detokenize(self, tokens, special=False):
        """Token ids to text (undecodable bytes replaced)."""
        return self.detokenize_bytes(tokens, special).decode("utf-8", "replace")

    def is_eog(self, token):
        out = ctypes.c_int()
        check(C.lib().kvrt_model_token_is_eog(ctypes.byref(out), self._p, token))
        return bool(out.value)

    def chat_apply(self, messages, add_assistant=True, template=None):
        """messages: [(role, content)] or [{"role":..., "content":...}]. Tokenize
        the result with parse_special=True. template: None (the model's own; a GGUF
        without one raises KvrtError UNSUPPORTED), a family name ("chatml", "llama2",
        "llama3", "gemma", "zephyr") or a Jinja template text kvrt recognises."""
        pairs = [(m["role"], m["content"]) if isinstance(m, dict) else tuple(m) for m in messages]
        arr = (C.chat_message * max(len(pairs), 1))()
        for i, (role, content) in enumerate(pairs):
            arr[i].role, arr[i].content = role.encode(), content.encode()
        if template is not None:
            t = template.encode()
            return read_text(lambda d, c, w: C.lib().kvrt_model_chat_apply_template(
                d, c, w, self._p, t, arr, len(pairs), 1 if add_assistant else 0)).decode()
        return read_text(lambda d, c, w: C.lib().kvrt_model_chat_apply(d, c, w, self._p, arr, len(pairs),
                                                                       1 if add_assistant else 0)).decode()
