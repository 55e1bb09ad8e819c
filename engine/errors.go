package engine

import "errors"

// Error kinds. The API maps each to one HTTP status (api/errors.go).
var (
	ErrNotFound    = errors.New("not found")
	ErrInvalid     = errors.New("invalid request")
	ErrConflict    = errors.New("conflict")
	ErrUnavailable = errors.New("unavailable")
	ErrOverloaded  = errors.New("overloaded") // a bound on pending runs is reached: see OverloadError
)

// ErrFansOut marks a request for a fan-out task's log (a kind of
// ErrNotFound): its logs are its instances'.
var ErrFansOut = errors.New("fans out")
