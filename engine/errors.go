package engine

import "errors"

// Error kinds. The API maps each to one HTTP status (api/errors.go).
var (
	ErrNotFound    = errors.New("not found")
	ErrInvalid     = errors.New("invalid request")
	ErrConflict    = errors.New("conflict")
	ErrUnavailable = errors.New("unavailable")
)
