package main

// The checks: every response body is kept as sent (captureTransport), decoded by upstream's
// generated client into upstream's model, validated with the model's own Validate, and walked
// for JSON keys the model does not declare. Every finding goes to the Recorder.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	oaerrors "github.com/go-openapi/errors"
	"github.com/go-openapi/strfmt"
)

// modelsPkg is the package whose struct types are walked field by field; every other type
// (strfmt.DateTime, timeext.Time, ...) is a leaf with its own JSON form.
const modelsPkg = "github.com/openshift/assisted-service/models"

// Finding kinds.
const (
	kindStatus   = "status"        // the server answered another status than the scenario needs
	kindDecode   = "decode"        // the body does not decode into the model (type mismatch)
	kindValidate = "validate"      // the model's Validate rejects the decoded value
	kindUnknown  = "unknown-field" // a JSON key the model does not declare
	kindRequest  = "request"       // a request we built from the models fails their Validate
)

// Finding is one distinct mismatch; Count says how often it was seen.
type Finding struct {
	Where   string `json:"where"`
	Kind    string `json:"kind"`
	Field   string `json:"field"`
	Message string `json:"message"`
	Count   int    `json:"count"`
}

// Summary is what the program prints: what it exercised and what did not conform.
type Summary struct {
	Scenario  string         `json:"scenario"`
	Requests  map[string]int `json:"requests"`
	Responses map[string]int `json:"responses"`
	Steps     map[string]int `json:"steps"`
	Replies   map[string]int `json:"replies"`
	Failures  []*Finding     `json:"failures"`
	Fatal     string         `json:"fatal,omitempty"`
	Notes     []string       `json:"notes"`
}

// Recorder collects counts and findings from every goroutine.
type Recorder struct {
	mu       sync.Mutex
	s        Summary
	findings map[string]*Finding
}

func newRecorder(scenario string) *Recorder {
	return &Recorder{
		s: Summary{
			Scenario:  scenario,
			Requests:  map[string]int{},
			Responses: map[string]int{},
			Steps:     map[string]int{},
			Replies:   map[string]int{},
			Notes:     []string{},
		},
		findings: map[string]*Finding{},
	}
}

func (r *Recorder) count(m map[string]int, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m[key]++
}

func (r *Recorder) request(op string) { r.count(r.s.Requests, op) }

func (r *Recorder) response(op string, code int) {
	r.count(r.s.Responses, fmt.Sprintf("%s %d", op, code))
}

func (r *Recorder) step(stepType string)  { r.count(r.s.Steps, stepType) }
func (r *Recorder) reply(stepType string) { r.count(r.s.Replies, stepType) }

func (r *Recorder) note(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.s.Notes = append(r.s.Notes, fmt.Sprintf(format, a...))
}

func (r *Recorder) fatal(format string, a ...any) { r.setFatal(fmt.Sprintf(format, a...)) }

func (r *Recorder) setFatal(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s.Fatal == "" {
		r.s.Fatal = msg
	}
}

// indexRe turns array positions in field paths into `*`, so that one mismatch on every host of
// a list is one finding.
var indexRe = regexp.MustCompile(`(^|\.)\d+(\.|$)`)

func normalizeField(f string) string {
	for {
		n := indexRe.ReplaceAllString(f, "$1*$2")
		if n == f {
			return f
		}
		f = n
	}
}

func (r *Recorder) fail(where, kind, field, message string) {
	field = normalizeField(field)
	key := where + "\x00" + kind + "\x00" + field
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.findings[key]; ok {
		f.Count++
		return
	}
	f := &Finding{Where: where, Kind: kind, Field: field, Message: message, Count: 1}
	r.findings[key] = f
	r.s.Failures = append(r.s.Failures, f)
}

func (r *Recorder) summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Copies: an installer of a scenario that timed out may still be recording.
	s := r.s
	s.Requests, s.Responses = maps.Clone(r.s.Requests), maps.Clone(r.s.Responses)
	s.Steps, s.Replies = maps.Clone(r.s.Steps), maps.Clone(r.s.Replies)
	s.Notes = slices.Clone(r.s.Notes)
	s.Failures = nil
	for _, f := range r.s.Failures {
		c := *f
		s.Failures = append(s.Failures, &c)
	}
	sort.Slice(s.Failures, func(i, j int) bool {
		a, b := s.Failures[i], s.Failures[j]
		return a.Where+a.Kind+a.Field < b.Where+b.Kind+b.Field
	})
	if s.Failures == nil {
		s.Failures = []*Finding{}
	}
	return s
}

// validatable is every generated model.
type validatable interface {
	Validate(strfmt.Registry) error
}

// validate runs the model's Validate and records each violation under its field path. A
// generated list's Validate stops at its first invalid element, so every element of every list
// inside v is validated on its own too (the same finding from both merges).
func (r *Recorder) validate(where string, v any) {
	m, ok := v.(validatable)
	if !ok || isNil(v) {
		return
	}
	r.validateOne(where, "", m)
	r.validateElements(where, reflect.ValueOf(v), "")
}

func (r *Recorder) validateOne(where, prefix string, m validatable) {
	for _, e := range flatten(m.Validate(strfmt.Default)) {
		field := ""
		var ve *oaerrors.Validation
		if errors.As(e, &ve) {
			field = join(prefix, ve.Name)
		}
		r.fail(where, kindValidate, field, e.Error())
	}
}

func (r *Recorder) validateElements(where string, v reflect.Value, path string) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type().PkgPath() != modelsPkg {
			return
		}
		fields := map[string]reflect.Type{}
		jsonFields(v.Type(), fields)
		for name := range fields {
			if f := fieldByJSONName(v, name); f.IsValid() {
				r.validateElements(where, f, join(path, name))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			e := v.Index(i)
			p := join(path, fmt.Sprint(i))
			if e.Kind() != reflect.Pointer && e.CanAddr() {
				e = e.Addr()
			}
			if m, ok := e.Interface().(validatable); ok && !isNil(m) {
				r.validateOne(where, p, m)
			}
			r.validateElements(where, e, p)
		}
	}
}

// fieldByJSONName finds a struct field (embedded structs included) by its JSON key.
func fieldByJSONName(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			if found := fieldByJSONName(v.Field(i), name); found.IsValid() {
				return found
			}
			continue
		}
		if f.IsExported() && tag == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// checkRequest validates a request body we built from the models before it is sent.
func (r *Recorder) checkRequest(op string, v any) {
	m, ok := v.(validatable)
	if !ok || isNil(v) {
		return
	}
	for _, e := range flatten(m.Validate(strfmt.Default)) {
		r.fail(op, kindRequest, "", e.Error())
	}
}

func flatten(err error) []error {
	if err == nil {
		return nil
	}
	var ce *oaerrors.CompositeError
	if errors.As(err, &ce) {
		var out []error
		for _, e := range ce.Errors {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

func isNil(v any) bool {
	rv := reflect.ValueOf(v)
	return !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil())
}

// strictDecode decodes raw into target as the client would, then validates it and reports
// keys the model does not know.
func (r *Recorder) strictDecode(where string, raw []byte, target any) bool {
	if err := json.Unmarshal(raw, target); err != nil {
		r.fail(where, kindDecode, decodeField(err), err.Error())
		return false
	}
	r.unknownKeys(where, raw, reflect.TypeOf(target))
	r.validate(where, target)
	return true
}

func decodeField(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field
	}
	return ""
}

// unknownKeys walks the JSON document beside the model type.
func (r *Recorder) unknownKeys(where string, raw []byte, t reflect.Type) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return // already reported as a decode error
	}
	walk(doc, t, "", func(path string) {
		r.fail(where, kindUnknown, path, "the model has no field "+path)
	})
}

func walk(v any, t reflect.Type, path string, unknown func(string)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok || t.PkgPath() != modelsPkg {
			return
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		for k, sub := range obj {
			ft, ok := fields[k]
			if !ok {
				unknown(join(path, k))
				continue
			}
			walk(sub, ft, join(path, k), unknown)
		}
	case reflect.Slice, reflect.Array:
		if arr, ok := v.([]any); ok {
			for i, e := range arr {
				walk(e, t.Elem(), join(path, fmt.Sprint(i)), unknown)
			}
		}
	case reflect.Map:
		if obj, ok := v.(map[string]any); ok {
			for k, e := range obj {
				walk(e, t.Elem(), join(path, k), unknown)
			}
		}
	}
}

// jsonFields lists a struct's JSON keys as encoding/json sees them: untagged embedded structs
// (go-swagger's allOf) contribute their fields.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	if k == "" {
		return path
	}
	return path + "." + k
}

// capture holds the raw response of one call.
type capture struct {
	status int
	body   []byte
}

type captureKey struct{}

// captureTransport keeps a copy of each response body for the call whose context asks for it.
type captureTransport struct{ next http.RoundTripper }

func (t captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	c, ok := req.Context().Value(captureKey{}).(*capture)
	if !ok {
		return resp, nil
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	c.status = resp.StatusCode
	c.body = b
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

func withCapture(ctx context.Context) (context.Context, *capture) {
	c := &capture{}
	return context.WithValue(ctx, captureKey{}, c), c
}
