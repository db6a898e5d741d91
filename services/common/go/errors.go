package common

import (
	"errors"
	"fmt"
)

// The contract's error codes (contract/contract.json "errors").
const (
	NotFound          = "NOT_FOUND"
	InvalidArgument   = "INVALID_ARGUMENT"
	ResourceExhausted = "RESOURCE_EXHAUSTED"
	Unavailable       = "UNAVAILABLE"
	DeadlineExceeded  = "DEADLINE_EXCEEDED"
	Internal          = "INTERNAL"
)

// Error is an error of the contract: a code of the error table and a message.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf makes a contract error.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// AsError is err as a contract error; anything else is INTERNAL (a bug).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: Internal, Message: err.Error()}
}

// HTTPStatus is the error's HTTP status from the contract's table.
func (c *Contract) HTTPStatus(code string) int {
	if row, ok := c.Errors[code]; ok {
		return row.HTTP
	}
	return c.Errors[Internal].HTTP
}

// CodeOfHTTPStatus is the contract code an HTTP status stands for (as
// contract/errors.py CODE_OF_HTTP_STATUS): for statuses outside the table,
// INVALID_ARGUMENT below 500 and INTERNAL from 500.
func (c *Contract) CodeOfHTTPStatus(status int) string {
	for code, row := range c.Errors {
		if row.HTTP == status {
			return code
		}
	}
	if status < 500 {
		return InvalidArgument
	}
	return Internal
}
