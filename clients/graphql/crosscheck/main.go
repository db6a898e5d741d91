// The GraphQL cross-check client: Go's net/http POSTing the lab client's
// query and variables (clients/internal/crosscheck). A reply is a success when
// it decodes as JSON with no "errors" and a "data" object.
package main

import "protolab/clients/internal/crosscheck"

func main() {
	crosscheck.Main("Go net/http", crosscheck.ModuleVersion("std"), func(plan crosscheck.Plan) (*crosscheck.Client, error) {
		return crosscheck.HTTP(plan, check)
	})
}

func check(status int, body []byte) error {
	v, err := crosscheck.JSONStatus(status, body)
	if err != nil {
		return err
	}
	reply, ok := v.(map[string]any)
	if !ok {
		return crosscheck.Fail("not a GraphQL response", "%.200s", body)
	}
	if errs, ok := reply["errors"].([]any); ok && len(errs) > 0 {
		return crosscheck.Fail("graphql error", "%v", errs[0])
	}
	if _, ok := reply["data"].(map[string]any); !ok {
		return crosscheck.Fail("no data", "%.200s", body)
	}
	return nil
}
