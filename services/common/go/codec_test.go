package common

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The encodings Python's json.dumps(ensure_ascii=False, separators=(",", ":")) gives.
func TestAppendJSONIsPythonsEncoding(t *testing.T) {
	cases := []struct {
		value any
		want  string
	}{
		{"plain", `"plain"`},
		{"é 日本 😀 \u2028", "\"é 日本 😀 \u2028\""},
		{"q\"b\\s/<&>", `"q\"b\\s/<&>"`},
		{"\n\r\t\b\f\x00\x1f\x7f", `"\n\r\t\b\f\u0000\u001f` + "\x7f\""},
		{bson.D{{Key: "b", Value: nil}, {Key: "a", Value: bson.A{true, false, "x"}}}, `{"b":null,"a":[true,false,"x"]}`},
		{map[string]any{"z": 1, "a": []any{}}, `{"a":[],"z":1}`},
	}
	for _, c := range cases {
		if got := string(MarshalJSON(c.value)); got != c.want {
			t.Errorf("MarshalJSON(%#v) = %s, want %s", c.value, got, c.want)
		}
	}
}

func TestDecodeJSONRefusesWhatPythonRefuses(t *testing.T) {
	for _, body := range []string{`{"name": `, "\xff\xfe", `{} {}`} {
		if _, err := DecodeJSON([]byte(body)); err == nil {
			t.Errorf("DecodeJSON(%q) accepted", body)
		}
	}
}
