// Package api is orkwal's HTTP JSON API over the engine (net/http ServeMux
// patterns). It holds no state of its own.
//
// Invariants:
//   - A 2xx answer to a write (POST, DELETE) is sent only after the engine
//     reports the change durable.
//   - Every error is JSON {"error": "..."} with a status chosen in one place
//     (statusOf) from the engine's error kinds.
//   - Bad input is rejected before it reaches the engine: bodies are size
//     capped, names and ids are checked, so nothing is written for it.
package api
