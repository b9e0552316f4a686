package main

// One place that sends every call: it counts it, keeps the raw response, and checks whatever
// upstream's generated client decoded (success payload or typed error payload).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"time"

	"github.com/go-openapi/runtime"
	rtclient "github.com/go-openapi/runtime/client"
	"github.com/go-openapi/strfmt"
	"github.com/openshift/assisted-service/client"
)

// callTimeout bounds one request; the server answers in milliseconds.
const callTimeout = 15 * time.Second

// API is upstream's client bound to our server and one token.
type API struct {
	c    *client.AssistedInstall
	rt   *rtclient.Runtime
	auth runtime.ClientAuthInfoWriter
	rec  *Recorder
}

// newAPI builds the generated client the way the agent does: base path
// /api/assisted-install, the token in X-Secret-Key.
func newAPI(serviceURL, token string, rec *Recorder) (*API, error) {
	u, err := url.Parse(serviceURL)
	if err != nil {
		return nil, err
	}
	u.Path = client.DefaultBasePath
	auth := rtclient.APIKeyAuth("X-Secret-Key", "header", token)
	transport := captureTransport{next: http.DefaultTransport}
	c := client.New(client.Config{URL: u, Transport: transport, AuthInfo: auth})
	rt := rtclient.New(u.Host, u.Path, []string{u.Scheme})
	rt.Transport = transport
	return &API{c: c, rt: rt, auth: auth, rec: rec}, nil
}

// Outcome of one call.
type Outcome struct {
	// Status is the HTTP status, 0 when the server could not be reached.
	Status int
	// Err is the client's error (typed error responses included).
	Err error
}

// OK is true for the status the scenario wanted.
func (o Outcome) OK(want int) bool { return o.Status == want }

// do runs one call of operation op. want is the status the scenario needs; any other status is
// a finding. The success payload (when f returns one) and typed error payloads are validated
// against their model and walked for unknown keys.
func (a *API) do(op string, want int, f func(ctx context.Context) (any, error)) Outcome {
	return a.doTolerating(op, want, nil, f)
}

// doTolerating is do for calls where the protocol also allows other statuses (the caller
// retries): those are decoded and checked like any answer, but are no finding by themselves.
func (a *API) doTolerating(op string, want int, tolerated []int, f func(ctx context.Context) (any, error)) Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	ctx, c := withCapture(ctx)
	a.rec.request(op)
	res, err := f(ctx)
	if c.status == 0 {
		// Not an HTTP exchange (connection refused, timeout): callers retry.
		return Outcome{Err: err}
	}
	where := fmt.Sprintf("%s %d", op, c.status)
	a.rec.response(op, c.status)
	var payload any
	switch {
	case err == nil:
		payload = payloadOf(res)
	case payloadOf(err) != nil:
		payload = payloadOf(err)
	default:
		var apiErr *runtime.APIError
		if !errors.As(err, &apiErr) {
			// The client reached the server but could not decode the body into the model.
			a.rec.fail(where, kindDecode, decodeField(err), err.Error())
		}
	}
	if c.status != want && !slices.Contains(tolerated, c.status) {
		a.rec.fail(op, kindStatus, "", fmt.Sprintf("got %d, want %d: %s", c.status, want, excerpt(c.body)))
	}
	if payload != nil {
		if _, ok := payload.(validatable); ok {
			a.rec.unknownKeys(where, c.body, reflect.TypeOf(payload))
			a.rec.validate(where, payload)
		}
	}
	return Outcome{Status: c.status, Err: err}
}

// payloadOf returns the generated response's Payload field, if it has one.
func payloadOf(v any) any {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil
	}
	rv = rv.Elem()
	if rv.Kind() != reflect.Struct {
		return nil
	}
	f := rv.FieldByName("Payload")
	if !f.IsValid() || !f.CanInterface() {
		return nil
	}
	p := f.Interface()
	// A list model (HostList, MonitoredOperatorsList) is a slice: validate through a pointer.
	if f.Kind() == reflect.Slice {
		ptr := reflect.New(f.Type())
		ptr.Elem().Set(f)
		return ptr.Interface()
	}
	if f.Kind() == reflect.Pointer && f.IsNil() {
		return nil
	}
	return p
}

func excerpt(b []byte) string {
	const max = 300
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// submit sends an operation the pinned client does not have (it predates it), with a body we
// build; the response is only counted.
func (a *API) submit(ctx context.Context, id, method, path string, pathParams map[string]string, body any) (any, error) {
	return a.rt.Submit(&runtime.ClientOperation{
		ID:                 id,
		Method:             method,
		PathPattern:        path,
		ProducesMediaTypes: []string{"application/json"},
		ConsumesMediaTypes: []string{"application/json"},
		Schemes:            []string{"http", "https"},
		Params: runtime.ClientRequestWriterFunc(func(r runtime.ClientRequest, _ strfmt.Registry) error {
			for k, v := range pathParams {
				if err := r.SetPathParam(k, v); err != nil {
					return err
				}
			}
			return r.SetBodyParam(body)
		}),
		Reader: runtime.ClientResponseReaderFunc(func(resp runtime.ClientResponse, _ runtime.Consumer) (any, error) {
			if resp.Code()/100 == 2 {
				return nil, nil
			}
			return nil, runtime.NewAPIError("refused", nil, resp.Code())
		}),
		AuthInfo: a.auth,
		Context:  ctx,
	})
}
