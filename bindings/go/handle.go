// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

package kvrt

import "sync"

// handle owns one kvrt object; p is nil once it is closed. mu guards p against
// Close: types that kvrt synchronises internally take it shared (RLock) for
// their calls, the others exclusively (Lock).
type handle[T any] struct {
	mu sync.RWMutex
	p  *T
}

// release destroys the object the first time it is called and reports whether
// it did (the caller then clears its finalizer); later calls do nothing.
func (h *handle[T]) release(destroy func(*T)) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.p == nil {
		return false
	}
	destroy(h.p)
	h.p = nil
	return true
}
