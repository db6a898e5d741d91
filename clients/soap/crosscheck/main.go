// The SOAP cross-check client: Go's net/http POSTing the envelope zeep
// writes for the lab's client (clients/internal/crosscheck). A reply is a
// success when it is status 200 and an XML document (decoded token by token,
// to its end) with no SOAP Fault.
package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"

	"protolab/clients/internal/crosscheck"
)

const soapEnv = "http://schemas.xmlsoap.org/soap/envelope/"

func main() {
	crosscheck.Main("Go net/http + encoding/xml", crosscheck.ModuleVersion("std"), func(plan crosscheck.Plan) (*crosscheck.Client, error) {
		return crosscheck.HTTP(plan, check)
	})
}

func check(status int, body []byte) error {
	decoder := xml.NewDecoder(bytes.NewReader(body))
	fault, elements := false, 0
	for {
		token, err := decoder.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return crosscheck.Fail("undecodable reply", "status %d: %v", status, err)
		}
		if start, ok := token.(xml.StartElement); ok {
			elements++
			fault = fault || (start.Name.Space == soapEnv && start.Name.Local == "Fault")
		}
	}
	switch {
	case fault:
		return crosscheck.Fail("SOAP Fault", "status %d: %.300s", status, body)
	case status != 200:
		return crosscheck.Fail(fmt.Sprintf("status %d", status), "%.200s", body)
	case elements == 0:
		return crosscheck.Fail("empty reply", "status %d", status)
	}
	return nil
}
