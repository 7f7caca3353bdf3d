// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Package kvrt is the Go binding of libkvrt, the embeddable KV-cache runtime
// for CPU inference, over its C ABI (cgo, pkg-config package "kvrt").
//
// Every handle has Close (idempotent; calls after Close return ErrClosed),
// every fallible call returns an error carrying kvrt's status and message
// (*Error), callbacks reach Go through cgo.Handle (C never holds a Go
// pointer), and a panic in a callback is recovered before it could cross C
// frames and re-raised once the C call returned.
package kvrt

/*
#cgo pkg-config: kvrt
#include <stdlib.h>
#include <kvrt/kvrt.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
)

// Status is a kvrt_status code (0 = OK, errors negative).
type Status int32

const (
	OK                 Status = C.KVRT_OK
	ErrInvalidArgument Status = C.KVRT_ERR_INVALID_ARGUMENT
	ErrOutOfMemory     Status = C.KVRT_ERR_OUT_OF_MEMORY
	ErrCacheFull       Status = C.KVRT_ERR_CACHE_FULL
	ErrNotFound        Status = C.KVRT_ERR_NOT_FOUND
	ErrOutOfRange      Status = C.KVRT_ERR_OUT_OF_RANGE
	ErrBadHandle       Status = C.KVRT_ERR_BAD_HANDLE
	ErrIO              Status = C.KVRT_ERR_IO
	ErrBadFormat       Status = C.KVRT_ERR_BAD_FORMAT
	ErrUnsupported     Status = C.KVRT_ERR_UNSUPPORTED
	ErrBufferTooSmall  Status = C.KVRT_ERR_BUFFER_TOO_SMALL
	ErrInvalidState    Status = C.KVRT_ERR_INVALID_STATE
	ErrOverflow        Status = C.KVRT_ERR_OVERFLOW
	ErrMismatch        Status = C.KVRT_ERR_MISMATCH
	ErrCancelled       Status = C.KVRT_ERR_CANCELLED
	ErrInternal        Status = C.KVRT_ERR_INTERNAL
)

// String is kvrt's name for the code ("KVRT_ERR_NOT_FOUND").
func (s Status) String() string { return C.GoString(C.kvrt_status_string(C.kvrt_status(s))) }

// Error is a failed kvrt call: its status and kvrt's message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return e.Status.String() + ": " + e.Message }

// Is makes errors.Is(err, kvrt.ErrNotFound) work.
func (e *Error) Is(target error) bool {
	if s, ok := target.(Status); ok {
		return s == e.Status
	}
	return false
}

// Error lets a Status be used as an errors.Is target.
func (s Status) Error() string { return s.String() }

// ErrClosed is returned by every method of a handle after its Close.
var ErrClosed = errors.New("kvrt: handle used after Close")

// call runs a kvrt call and, on failure, reads kvrt_last_error on the same OS
// thread (the message is thread-local; a goroutine may otherwise move).
func call(f func() C.kvrt_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := f()
	if st == C.KVRT_OK {
		return nil
	}
	return &Error{Status: Status(st), Message: C.GoString(C.kvrt_last_error())}
}

// ClearError clears the calling OS thread's last kvrt error message.
func ClearError() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.kvrt_clear_error()
}

func bindingError(s Status, format string, args ...interface{}) error {
	return &Error{Status: s, Message: fmt.Sprintf(format, args...)}
}

// HeaderVersion is the version of the headers this package was built with.
const HeaderVersion uint32 = C.KVRT_VERSION_NUMBER

// Version returns the loaded library's kvrt_version() as major, minor, patch.
func Version() (major, minor, patch uint32) {
	v := uint32(C.kvrt_version())
	return v >> 16, (v >> 8) & 0xff, v & 0xff
}

// VersionString returns the loaded library's version, e.g. "0.5.0".
func VersionString() string { return C.GoString(C.kvrt_version_string()) }

// CheckVersion errors unless the library's major version equals the headers'
// and its minor version is at least theirs.
func CheckVersion() error {
	lib := uint32(C.kvrt_version())
	if lib>>16 != HeaderVersion>>16 || (lib>>8)&0xff < (HeaderVersion>>8)&0xff {
		return bindingError(ErrMismatch, "libkvrt %s does not match the headers %d.%d.%d", VersionString(),
			HeaderVersion>>16, (HeaderVersion>>8)&0xff, HeaderVersion&0xff)
	}
	return nil
}
