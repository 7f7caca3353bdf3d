// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

package kvrt

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// callbackBox carries a Go callback to C as user_data: C receives a pointer
// to C memory that holds a cgo.Handle, never a Go pointer.
type callbackBox struct {
	handle cgo.Handle
	cmem   unsafe.Pointer
	panic  interface{}
	fn     interface{}
}

func newCallbackBox(fn interface{}) *callbackBox {
	b := &callbackBox{fn: fn}
	b.handle = cgo.NewHandle(b)
	b.cmem = C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
	*(*C.uintptr_t)(b.cmem) = C.uintptr_t(b.handle)
	return b
}

// userData is the pointer to hand to C.
func (b *callbackBox) userData() unsafe.Pointer { return b.cmem }

// finish frees the C memory and the handle, then re-raises a panic the
// callback raised (recovered inside the trampoline so it never crossed C).
func (b *callbackBox) finish() {
	C.free(b.cmem)
	b.handle.Delete()
	if b.panic != nil {
		panic(b.panic)
	}
}

// free releases the C memory and the handle without re-raising (a box that lives
// with an object, e.g. a context's progress callback, freed at its Close).
func (b *callbackBox) free() {
	C.free(b.cmem)
	b.handle.Delete()
}

func boxFrom(userData unsafe.Pointer) *callbackBox {
	return cgo.Handle(*(*C.uintptr_t)(userData)).Value().(*callbackBox)
}

// run calls f, turning a panic into "stop" (1) and recording it.
func (b *callbackBox) run(f func() bool) (ret C.int) {
	if b.panic != nil {
		return 1
	}
	defer func() {
		if p := recover(); p != nil {
			b.panic = p
			ret = 1
		}
	}()
	if f() {
		return 0
	}
	return 1
}
