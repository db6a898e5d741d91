// The REST cross-check client: Go's net/http, one kept-alive connection
// (clients/internal/crosscheck). A reply is a success when its status is
// below 400 and its body decodes as JSON.
package main

import "protolab/clients/internal/crosscheck"

func main() {
	crosscheck.Main("Go net/http", crosscheck.ModuleVersion("std"), func(plan crosscheck.Plan) (*crosscheck.Client, error) {
		return crosscheck.HTTP(plan, func(status int, body []byte) error {
			_, err := crosscheck.JSONStatus(status, body)
			return err
		})
	})
}
