package executors

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Google Cloud's Application Default Credentials, as its client libraries
// find them: the key file GOOGLE_APPLICATION_CREDENTIALS names (a service
// account's key, or gcloud's authorized user), else gcloud's
// ~/.config/gcloud/application_default_credentials.json, else the
// metadata server of the machine (GCE_METADATA_HOST, default
// metadata.google.internal). Each gives an OAuth2 access token for the
// cloud-platform scope, kept until a minute before it expires.

// GoogleConfig is how orkwal reaches Google Cloud's APIs.
type GoogleConfig struct {
	// BaseURL, when set, replaces the scheme and host of every API call
	// (tests: a local server following the public REST reference).
	BaseURL string
	// Tokens keeps the credentials' access token. Executors given the
	// same one share it (the engine gives its cloudrun executor and its
	// Deferred one: a token is fetched once until it expires); nil, an
	// executor keeps a token of its own.
	Tokens *GoogleTokens
}

// withDefaults fills Tokens with a cache of the executor's own, fetching
// through client.
func (g GoogleConfig) withDefaults(client *http.Client) GoogleConfig {
	if g.Tokens == nil {
		g.Tokens = NewGoogleTokens(client)
	}
	return g
}

const googleScope = "https://www.googleapis.com/auth/cloud-platform"

// GoogleTokens gives access tokens from the Application Default
// Credentials, the process's one credentials source, and keeps each until
// a minute before it expires. It is safe for concurrent use.
type GoogleTokens struct {
	client *http.Client
	mu     sync.Mutex // guards token and expiry, and serialises fetches
	token  string
	expiry time.Time
}

// NewGoogleTokens returns an empty cache that fetches tokens through
// client (nil: a client with a 30 s timeout).
func NewGoogleTokens(client *http.Client) *GoogleTokens {
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return &GoogleTokens{client: client}
}

// authorize sets req's bearer token, fetching a new one when needed.
func (g *GoogleTokens) authorize(req *http.Request) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.token == "" || time.Until(g.expiry) < time.Minute {
		tok, ttl, err := g.fetch(req.Context())
		if err != nil {
			return fmt.Errorf("google credentials: %w", err)
		}
		g.token, g.expiry = tok, time.Now().Add(ttl)
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	return nil
}

// keyFile is a credentials file's fields that matter here.
type keyFile struct {
	Type         string `json:"type"`
	ClientEmail  string `json:"client_email"`
	PrivateKey   string `json:"private_key"`
	PrivateKeyID string `json:"private_key_id"`
	TokenURI     string `json:"token_uri"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	RefreshToken string `json:"refresh_token"`
}

func (g *GoogleTokens) fetch(ctx context.Context) (string, time.Duration, error) {
	path := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS")
	if path == "" {
		if home, err := os.UserHomeDir(); err == nil {
			well := filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
			if _, err := os.Stat(well); err == nil {
				path = well
			}
		}
	}
	if path == "" {
		return g.fromMetadata(ctx)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0, err
	}
	var k keyFile
	if err := json.Unmarshal(b, &k); err != nil {
		return "", 0, fmt.Errorf("%s: %w", path, err)
	}
	if k.TokenURI == "" {
		k.TokenURI = "https://oauth2.googleapis.com/token"
	}
	switch k.Type {
	case "service_account":
		assertion, err := k.assertion(time.Now())
		if err != nil {
			return "", 0, fmt.Errorf("%s: %w", path, err)
		}
		return g.tokenRequest(ctx, k.TokenURI, url.Values{
			"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {assertion}})
	case "authorized_user":
		return g.tokenRequest(ctx, k.TokenURI, url.Values{"grant_type": {"refresh_token"},
			"client_id": {k.ClientID}, "client_secret": {k.ClientSecret}, "refresh_token": {k.RefreshToken}})
	}
	return "", 0, fmt.Errorf("%s: credentials of type %q: use a service account key or gcloud's authorized user", path, k.Type)
}

// assertion is a service account's signed JWT asking for a token.
func (k *keyFile) assertion(now time.Time) (string, error) {
	block, _ := pem.Decode([]byte(k.PrivateKey))
	if block == nil {
		return "", errors.New("private_key: not PEM")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("private_key: %w", err)
	}
	key, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return "", errors.New("private_key: not an RSA key")
	}
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": k.PrivateKeyID})
	claims, _ := json.Marshal(map[string]any{"iss": k.ClientEmail, "scope": googleScope, "aud": k.TokenURI,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signed + "." + enc.EncodeToString(sig), nil
}

func (g *GoogleTokens) fromMetadata(ctx context.Context) (string, time.Duration, error) {
	host := os.Getenv("GCE_METADATA_HOST")
	if host == "" {
		host = "metadata.google.internal"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		"http://"+host+"/computeMetadata/v1/instance/service-accounts/default/token", nil)
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Metadata-Flavor", "Google")
	return g.readToken(req, "metadata server")
}

func (g *GoogleTokens) tokenRequest(ctx context.Context, uri string, form url.Values) (string, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, uri, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return g.readToken(req, uri)
}

func (g *GoogleTokens) readToken(req *http.Request, from string) (string, time.Duration, error) {
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	code, err := doJSON(g.client, req, &tok)
	switch {
	case err != nil:
		return "", 0, fmt.Errorf("token from %s: %w", from, err)
	case code/100 != 2 || tok.AccessToken == "":
		return "", 0, fmt.Errorf("token from %s: status %d, no access_token", from, code)
	}
	return tok.AccessToken, time.Duration(tok.ExpiresIn) * time.Second, nil
}
