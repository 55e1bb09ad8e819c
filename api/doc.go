// Package api is orkwal's HTTP JSON API over the engine (net/http ServeMux
// patterns). It holds no state of its own but request metrics and the log
// streams in flight. docs/api.md documents every endpoint; GET /openapi.json
// serves the same as OpenAPI 3.1.
//
// Invariants:
//   - A 2xx answer to a write (POST, DELETE) is sent only after the engine
//     reports the change durable.
//   - Every error is JSON {"error": "..."} with a status chosen in one place
//     (statusOf) from the engine's error kinds, or by the checks before it
//     (400 bad input, 401 no or wrong token, 403 a web page's request, 404/405
//     no such endpoint, 413 too large, 429 too many log streams).
//   - Bad input is rejected before it reaches the engine: bodies are size
//     capped, paths are checked segment by segment (no empty, "." or ".."
//     segment, no encoded slash, backslash or control character), names,
//     ids, query parameters and headers are checked, so nothing is written
//     for it.
//   - With a token (WithToken), every endpoint but GET /healthz needs
//     "Authorization: Bearer <token>", compared in constant time.
//   - A web page cannot drive the API (see browserGuard): a cross-origin
//     write is refused, and without a token so is a request whose Host is
//     not an IP address or localhost (DNS rebinding).
//   - The server never polls the engine's state: it waits on
//     engine.Changed(). Log streams also look at the log file every
//     logPollInterval, since a task's output commits nothing.
package api
