// The auth service: configuration, signing key rotation, and HTTP over the store and the grants.
#include "services/auth/service.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/log.h"
#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "crypto/sha256.h"
#include "db/connection.h"
#include "db/pool.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/problem.h"
#include "services/auth/factors.h"
#include "services/auth/form.h"
#include "services/auth/grants.h"
#include "services/auth/keys.h"
#include "services/auth/limiter.h"
#include "services/auth/passkeys.h"
#include "services/auth/passwords.h"
#include "services/auth/schema.h"
#include "services/auth/sso.h"
#include "services/auth/store.h"
#include "services/auth/totp.h"
#include "services/http_config.h"
#include "services/job_queue.h"
#include "tokens/ring_file.h"

namespace govern::auth_service {
namespace {

using json = nlohmann::json;
constexpr std::string_view kSessionCookie = "govern_auth_session";
constexpr std::string_view kCsrfCookie = "govern_auth_csrf";
constexpr std::string_view kAdminScope = "auth:admin";

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

net::Response NoStore(net::Response r) {
  r.headers.Set("Cache-Control", "no-store");
  r.headers.Set("Pragma", "no-cache");
  return r;
}

net::Response NotReady() {
  net::Response r(503, R"({"error":"temporarily_unavailable","error_description":"starting"})",
                  "application/json");
  r.headers.Set("Retry-After", "1");
  return r;
}

net::Response FromReply(const Reply& reply) {
  net::Response r(reply.status, reply.body, "application/json");
  if (reply.basic_challenge) r.headers.Set("WWW-Authenticate", "Basic realm=\"govern\"");
  if (reply.status == 401 && !reply.basic_challenge) {
    r.headers.Set("WWW-Authenticate", "Bearer error=\"invalid_token\"");
  }
  if (reply.retry_after > 0) r.headers.Set("Retry-After", std::to_string(reply.retry_after));
  return NoStore(std::move(r));
}

net::Response Problem(int status, std::string detail, const net::Request& req) {
  net::Response r = net::ProblemResponse(status, std::move(detail), req.path);
  if (status == 401) r.headers.Set("WWW-Authenticate", "Bearer");
  return r;
}

net::Response StatusProblem(const Status& s, const net::Request& req) {
  switch (s.code()) {
    case Code::kUnauthenticated:
      return Problem(401, s.message(), req);
    case Code::kPermissionDenied:
      return Problem(403, s.message(), req);
    case Code::kNotFound:
      return Problem(404, s.message(), req);
    case Code::kAlreadyExists:
    case Code::kFailedPrecondition:
      return Problem(409, s.message(), req);
    case Code::kInvalidArgument:
      return Problem(400, s.message(), req);
    case Code::kUnavailable:
      return Problem(503, "the auth store is unavailable; retry later", req);
    default:
      return Problem(500, "internal error", req);
  }
}

// The token of `Authorization: Bearer <token>` (RFC 6750), or "" when there is none or it is malformed.
std::string_view BearerOf(const net::Request& req) {
  return net::BearerToken(req).value_or(std::string_view{});
}

std::optional<std::string> CookieOf(const net::Request& req, std::string_view name) {
  for (const auto& [k, v] : req.headers.fields()) {
    if (!net::EqualsIgnoreCase(k, "Cookie")) continue;
    std::string_view rest = v;
    while (!rest.empty()) {
      size_t semi = rest.find(';');
      std::string_view part = rest.substr(0, semi);
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
      size_t eq = part.find('=');
      if (eq != std::string_view::npos && part.substr(0, eq) == name) return std::string(part.substr(eq + 1));
    }
  }
  return std::nullopt;
}

// The parameters of an authorization request, from the query (GET) or the sign-in form (POST).
struct AuthorizeParams {
  std::string client_id, redirect_uri, response_type, scope, state, nonce, code_challenge,
      code_challenge_method, prompt;
  std::string csrf;  // the sign-in form's token, equal to the govern_auth_csrf cookie (login CSRF)
  static AuthorizeParams From(const std::map<std::string, std::string, std::less<>>& m) {
    auto get = [&](std::string_view k) {
      auto it = m.find(k);
      return it == m.end() ? std::string() : it->second;
    };
    return {get("client_id"), get("redirect_uri"), get("response_type"),  get("scope"),
            get("state"),     get("nonce"),        get("code_challenge"), get("code_challenge_method"),
            get("prompt"),    get("csrf")};
  }
  std::string Hidden() const {
    std::string out;
    for (auto [k, v] : {std::pair<const char*, const std::string*>{"client_id", &client_id},
                        {"redirect_uri", &redirect_uri},
                        {"response_type", &response_type},
                        {"scope", &scope},
                        {"state", &state},
                        {"nonce", &nonce},
                        {"code_challenge", &code_challenge},
                        {"code_challenge_method", &code_challenge_method},
                        {"csrf", &csrf}}) {
      out += "<input type=\"hidden\" name=\"" + std::string(k) + "\" value=\"" + HtmlEscape(*v) + "\">\n";
    }
    return out;
  }
};

// The origin (scheme://host[:port]) of an absolute URL, or "" when it has none.
std::string OriginOf(std::string_view url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return "";
  size_t end = url.find_first_of("/?#", scheme_end + 3);
  return std::string(url.substr(0, end));
}

// `form_target` is the origin a form on the page may end at: a form post answered with a redirect to
// the application (the code) is checked against form-action by browsers, so the application's
// (already validated) redirect URI origin must be allowed beside 'self'. `script` loads the page script
// `script_src` (/oauth/signin.js, /oauth/account.js); no inline script is ever allowed.
net::Response Page(int status, std::string_view title, std::string_view body_html,
                   std::string_view form_target = {}, std::string_view script_src = {}) {
  const bool script = !script_src.empty();
  std::string html =
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>" + HtmlEscape(title) + "</title>" +
      (script ? "<script src=\"" + std::string(script_src) + "\" defer></script>" : "") +
      "</head><body>\n<h1>" + HtmlEscape(title) + "</h1>\n" + std::string(body_html) + "</body></html>\n";
  net::Response r(status, std::move(html), "text/html; charset=utf-8");
  r.headers.Set("X-Frame-Options", "DENY");
  std::string csp = "default-src 'none'; form-action 'self'";
  // Only a plain origin is copied into the header (it came from a registered redirect URI).
  if (!form_target.empty() && form_target.find_first_of(" ;,'\"\r\n") == std::string_view::npos)
    csp += " " + std::string(form_target);
  if (script) csp += "; script-src 'self'; connect-src 'self'";
  csp += "; frame-ancestors 'none'";
  r.headers.Set("Content-Security-Policy", csp);
  return NoStore(std::move(r));
}

net::Response SignInPage(int status, const AuthorizeParams& p, std::string_view message,
                         std::string_view email) {
  std::string body;
  if (!message.empty()) body += "<p id=\"error\" role=\"alert\">" + HtmlEscape(message) + "</p>\n";
  body += "<form method=\"post\" action=\"/oauth/authorize\">\n" + p.Hidden() +
          "<label>Email <input type=\"email\" name=\"email\" autocomplete=\"username\" value=\"" +
          HtmlEscape(email) +
          "\" required></label>\n<label>Password <input type=\"password\" name=\"password\" "
          "autocomplete=\"current-password\" required></label>\n<button type=\"submit\">Sign "
          "in</button>\n</form>\n";
  // Passkeys: signin.js fetches options from /oauth/passkey/options, asks the browser, fills `handle`
  // and `credential` and posts this form (the same authorization parameters and csrf token).
  body += "<form id=\"passkey-form\" method=\"post\" action=\"/oauth/authorize/passkey\">\n" + p.Hidden() +
          "<input type=\"hidden\" name=\"handle\" value=\"\">\n<input type=\"hidden\" name=\"credential\" "
          "value=\"\">\n<button type=\"button\" id=\"passkey\" hidden>Sign in with a passkey</button>\n"
          "<p id=\"passkey-error\" role=\"alert\" hidden></p>\n</form>\n";
  return Page(status, "Sign in", body, OriginOf(p.redirect_uri), "/oauth/signin.js");
}

// The sign-in page's only script (served from /oauth/signin.js; the page's CSP allows no inline
// script). Shows the passkey button when the browser has WebAuthn; on click: options, the browser's
// ceremony, then the form post. A cancelled or failed ceremony shows a message and leaves the page.
constexpr std::string_view kSignInScript = R"js('use strict';
(() => {
  const button = document.getElementById('passkey');
  const form = document.getElementById('passkey-form');
  const error = document.getElementById('passkey-error');
  if (!button || !form || !window.PublicKeyCredential || !navigator.credentials) return;
  const fromB64u = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)).buffer;
  const toB64u = (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  const parse = (o) => PublicKeyCredential.parseRequestOptionsFromJSON
    ? PublicKeyCredential.parseRequestOptionsFromJSON(o)
    : Object.assign({}, o, {
        challenge: fromB64u(o.challenge),
        allowCredentials: (o.allowCredentials || []).map((c) => Object.assign({}, c, { id: fromB64u(c.id) })),
      });
  const json = (c) => {
    if (typeof c.toJSON === 'function') return c.toJSON();
    const r = c.response;
    return {
      id: c.id, rawId: toB64u(c.rawId), type: c.type, clientExtensionResults: c.getClientExtensionResults(),
      authenticatorAttachment: c.authenticatorAttachment || undefined,
      response: {
        clientDataJSON: toB64u(r.clientDataJSON), authenticatorData: toB64u(r.authenticatorData),
        signature: toB64u(r.signature), userHandle: r.userHandle ? toB64u(r.userHandle) : undefined,
      },
    };
  };
  const fail = (text) => { error.textContent = text; error.hidden = false; button.disabled = false; };
  button.hidden = false;
  button.addEventListener('click', async () => {
    button.disabled = true;
    error.hidden = true;
    let options;
    try {
      const r = await fetch('/oauth/passkey/options', { method: 'POST', credentials: 'same-origin' });
      if (!r.ok) throw new Error(String(r.status));
      options = await r.json();
    } catch (e) {
      return fail('Passkey sign-in is unavailable. Try again later or use your password.');
    }
    let credential;
    try {
      credential = await navigator.credentials.get({ publicKey: parse(options.publicKey) });
    } catch (e) {
      return fail('The passkey sign-in was cancelled or did not succeed. Try again or use your password.');
    }
    if (!credential) return fail('No passkey was chosen.');
    form.elements.handle.value = options.handle;
    form.elements.credential.value = JSON.stringify(json(credential));
    form.submit();
  });
})();
)js";

// The account page's only script (/oauth/account.js): "Add a passkey" asks for creation options, runs
// the browser's ceremony and posts the answer, with the page's CSRF token as X-CSRF-Token (the session
// cookie alone is not enough), then reloads the page so the list shows the new passkey.
constexpr std::string_view kAccountScript = R"js('use strict';
(() => {
  const button = document.getElementById('add-passkey');
  const status = document.getElementById('passkey-status');
  if (!button || !status || !window.PublicKeyCredential || !navigator.credentials) return;
  const csrf = button.dataset.csrf;
  const fromB64u = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)).buffer;
  const toB64u = (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  const parse = (o) => PublicKeyCredential.parseCreationOptionsFromJSON
    ? PublicKeyCredential.parseCreationOptionsFromJSON(o)
    : Object.assign({}, o, {
        challenge: fromB64u(o.challenge),
        user: Object.assign({}, o.user, { id: fromB64u(o.user.id) }),
        excludeCredentials: (o.excludeCredentials || []).map((c) => Object.assign({}, c, { id: fromB64u(c.id) })),
      });
  const json = (c) => {
    if (typeof c.toJSON === 'function') return c.toJSON();
    const r = c.response;
    return {
      id: c.id, rawId: toB64u(c.rawId), type: c.type, clientExtensionResults: c.getClientExtensionResults(),
      authenticatorAttachment: c.authenticatorAttachment || undefined,
      response: {
        clientDataJSON: toB64u(r.clientDataJSON), attestationObject: toB64u(r.attestationObject),
        transports: typeof r.getTransports === 'function' ? r.getTransports() : undefined,
      },
    };
  };
  const say = (text) => { status.textContent = text; status.hidden = false; button.disabled = false; };
  const post = (path, body) => fetch(path, {
    method: 'POST', credentials: 'same-origin', body,
    headers: { 'X-CSRF-Token': csrf, 'Content-Type': 'application/json' },
  });
  button.hidden = false;
  button.addEventListener('click', async () => {
    button.disabled = true;
    status.hidden = true;
    let options;
    try {
      const r = await post('/oauth/account/passkeys/options', '{}');
      if (!r.ok) throw new Error(String(r.status));
      options = await r.json();
    } catch (e) {
      return say('Adding a passkey is unavailable. Reload the page or sign in again.');
    }
    let credential;
    try {
      credential = await navigator.credentials.create({ publicKey: parse(options) });
    } catch (e) {
      return say('The passkey was not created (cancelled, or this device already holds one for you).');
    }
    const r = await post('/oauth/account/passkeys', JSON.stringify(json(credential)));
    if (r.status === 201) return window.location.reload();
    say(r.status === 409 ? 'This passkey is already registered.' : 'The passkey was not accepted.');
  });
})();
)js";

class AuthService final : public services::Service {
 public:
  std::string_view name() const override { return "auth"; }
  std::string_view summary() const override {
    return "sign-in and tokens: OAuth 2.1 / OIDC provider (code + PKCE, client credentials for agents, "
           "rotating "
           "refresh, token exchange), users, groups and clients in PostgreSQL";
  }

  void DeclareConfig(config::Schema& s) const override {
    using config::Type;
    s.Add({.key = "auth.listen",
           .type = Type::kString,
           .default_value = "127.0.0.1:7740",
           .help = "Address of the auth service's HTTP API (OAuth/OIDC endpoints, sign-in page, admin API).",
           .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    s.Add({.key = "auth.issuer",
           .type = Type::kString,
           .default_value = "",
           .help = "Issuer URL (the `iss` of every token and the base of the discovery document), e.g. "
                   "https://auth.example.com. Empty: http://<auth.listen> (for development)."});
    s.Add({.key = "auth.default_audience",
           .type = Type::kString,
           .default_value = "govern",
           .help = "Audience of access tokens when the request names none."});
    s.Add({.key = "auth.access_token_lifetime",
           .type = Type::kDuration,
           .default_value = "10m",
           .help = "Lifetime of access tokens.",
           .min = 10'000,
           .max = 86'400'000});
    s.Add({.key = "auth.id_token_lifetime",
           .type = Type::kDuration,
           .default_value = "10m",
           .help = "Lifetime of ID tokens.",
           .min = 10'000,
           .max = 86'400'000});
    s.Add({.key = "auth.refresh_token_lifetime",
           .type = Type::kDuration,
           .default_value = "720h",
           .help = "Lifetime of a refresh token family (a session) from its first token.",
           .min = 60'000});
    s.Add({.key = "auth.code_lifetime",
           .type = Type::kDuration,
           .default_value = "60s",
           .help = "Lifetime of an authorization code.",
           .min = 5'000,
           .max = 600'000});
    s.Add({.key = "auth.session_lifetime",
           .type = Type::kDuration,
           .default_value = "12h",
           .help = "How long the sign-in cookie lets a browser skip the password.",
           .min = 60'000});
    s.Add({.key = "auth.argon2.memory",
           .type = Type::kBytes,
           .default_value = "19MiB",
           .help = "Argon2id memory per password hash (RFC 9106 / OWASP: 19 MiB with 2 passes). Raising it "
                   "upgrades each stored hash at the user's next sign-in.",
           .min = 8 * 1024,
           .max = int64_t{1} << 30});
    s.Add({.key = "auth.argon2.passes",
           .type = Type::kInt,
           .default_value = "2",
           .help = "Argon2id passes (t).",
           .min = 1,
           .max = 64});
    s.Add({.key = "auth.argon2.lanes",
           .type = Type::kInt,
           .default_value = "1",
           .help = "Argon2id lanes (p).",
           .min = 1,
           .max = 64});
    s.Add({.key = "auth.rate_limit.account_failures",
           .type = Type::kInt,
           .default_value = "5",
           .help = "Failed sign-ins of one account within the window before it is locked for the lockout.",
           .min = 1,
           .max = 10'000});
    s.Add({.key = "auth.rate_limit.address_failures",
           .type = Type::kInt,
           .default_value = "50",
           .help = "Failed sign-ins from one source address within the window before it is locked.",
           .min = 1,
           .max = 1'000'000});
    s.Add({.key = "auth.rate_limit.window",
           .type = Type::kDuration,
           .default_value = "15m",
           .help = "Window over which failed sign-ins are counted.",
           .min = 1000});
    s.Add({.key = "auth.rate_limit.lockout",
           .type = Type::kDuration,
           .default_value = "15m",
           .help = "How long a locked account or address is refused (429 with Retry-After).",
           .min = 1000});
    s.Add({.key = "auth.trust_forwarded_for",
           .type = Type::kBool,
           .default_value = "false",
           .help = "Ignored (kept so old configurations load): list the proxies in auth.trusted_proxies."});
    s.Add({.key = "auth.trusted_proxies",
           .type = Type::kStringList,
           .default_value = "",
           .help =
               "Address blocks (CIDR, e.g. 10.0.0.0/8, fd00::/8) of the reverse proxies in front of auth. "
               "Only when the direct peer is in one is X-Forwarded-For read, and then its rightmost hop "
               "that is not a trusted proxy is the client. Empty: the direct peer is the client."});
    s.Add({.key = "auth.limits.signin_per_minute",
           .type = Type::kInt,
           .default_value = "10",
           .help = "Failed password, TOTP and passkey sign-ins one client address (prefix) may make a "
                   "minute, on average; past the burst the address gets 429 with Retry-After.",
           .min = 1,
           .max = 1'000'000});
    s.Add({.key = "auth.limits.signin_burst",
           .type = Type::kInt,
           .default_value = "20",
           .help = "Failed sign-ins one client address may make at once before auth.limits.signin_per_minute "
                   "applies.",
           .min = 1,
           .max = 1'000'000});
    s.Add({.key = "auth.limits.token_per_minute",
           .type = Type::kInt,
           .default_value = "10",
           .help = "Failed client authentications at the token endpoint one client address may make a "
                   "minute, on average.",
           .min = 1,
           .max = 1'000'000});
    s.Add({.key = "auth.limits.token_burst",
           .type = Type::kInt,
           .default_value = "20",
           .help = "Failed client authentications one client address may make at once at the token endpoint.",
           .min = 1,
           .max = 1'000'000});
    s.Add({.key = "auth.limits.ipv4_prefix",
           .type = Type::kInt,
           .default_value = "32",
           .help = "IPv4 addresses are limited per block of this prefix length (32: each address).",
           .min = 8,
           .max = 32});
    s.Add({.key = "auth.limits.ipv6_prefix",
           .type = Type::kInt,
           .default_value = "64",
           .help = "IPv6 addresses are limited per block of this prefix length (64: one host's usual share).",
           .min = 16,
           .max = 128});
    s.Add({.key = "auth.limits.max_addresses",
           .type = Type::kInt,
           .default_value = "100000",
           .help = "Client addresses each limiter remembers (about 100 bytes each); past it the least "
                   "recently failing one is forgotten.",
           .min = 100,
           .max = 100'000'000});
    s.Add({.key = "auth.rotation.period",
           .type = Type::kDuration,
           .default_value = "24h",
           .help = "How long each signing key signs before its successor takes over.",
           .min = 60'000});
    s.Add({.key = "auth.rotation.publish_ahead",
           .type = Type::kDuration,
           .default_value = "1h",
           .help = "How early a new key is published in the JWKS before it signs.",
           .min = 1000});
    s.Add({.key = "auth.rotation.keep_after",
           .type = Type::kDuration,
           .default_value = "2h",
           .help = "How long a retired key still verifies (at least the longest token lifetime).",
           .min = 1000});
    s.Add({.key = "auth.rotation.check_every",
           .type = Type::kDuration,
           .default_value = "1m",
           .help = "How often the service checks the key schedule and reloads the revocation list.",
           .min = 100,
           .max = 3'600'000});
    s.Add({.key = "auth.id_token_alg",
           .type = Type::kEnum,
           .default_value = "RS256",
           .help = "Algorithm of the published key ring (ID tokens). OIDC clients expect RS256 by default.",
           .choices = {"RS256", "ES256", "EdDSA"}});
    s.Add({.key = "auth.access_token_signing",
           .type = Type::kEnum,
           .default_value = "internal",
           .help = "How access tokens for auth.default_audience (Govern's own services) are signed. "
                   "'internal': HS256 with the internal ring (issue ~2 us, a first check ~3 us), which "
                   "services check with the ring file (auth.internal_ring_file) beside the JWKS. "
                   "'published': with the published ring (auth.id_token_alg), so a service holding the "
                   "JWKS alone can check them (RS256 issue ~250 us, a first check one signature "
                   "verification). Tokens for any other audience, tokens with scope auth:admin and person "
                   "sessions (code and refresh grants) are always on the published ring: the admin and "
                   "account APIs accept no other (docs/tokens.md).",
           .choices = {"published", "internal"}});
    s.Add({.key = "auth.internal_ring_file",
           .type = Type::kString,
           .default_value = "",
           .help = "Where the service writes the internal HS256 ring (the keys of Govern's own access "
                   "tokens) for the services that check them: rewritten durably, mode 0600, at start and "
                   "whenever the ring rotates (checked every auth.rotation.check_every); services read it "
                   "through tokens::TrustSources::ring_file. Empty: <data_dir>/auth/internal-ring.json. "
                   "Secret content: anyone who can read it can mint access tokens.",
           .validate = [](std::string_view v) {
             return v.empty() || v.starts_with('/') ? OkStatus()
                                                    : InvalidArgument("an absolute path, or empty");
           }});
    s.Add({.key = "auth.storage_key",
           .type = Type::kString,
           .default_value = "",
           .help = "64 hex digits: the AES-256-GCM key sealing signing keys and TOTP secrets in PostgreSQL. "
                   "Empty: <data_dir>/auth/storage.key, made on first start.",
           .secret = true});
    s.Add({.key = "auth.passkeys.rp_id",
           .type = Type::kString,
           .default_value = "",
           .help = "WebAuthn relying party ID (a registrable domain, e.g. example.com). Empty: the host of "
                   "auth.issuer."});
    s.Add({.key = "auth.passkeys.origins",
           .type = Type::kStringList,
           .default_value = "",
           .help = "Exact origins passkey ceremonies may come from. Empty: the origin of auth.issuer."});
    s.Add({.key = "auth.workers",
           .type = Type::kInt,
           .default_value = "4",
           .help = "Threads for requests that need PostgreSQL or a password hash (bounds concurrent hashes).",
           .min = 1,
           .max = 64});
  }

  std::vector<db::Migration> Migrations() const override { return auth_service::Migrations(); }

  Status Start(const services::Context& ctx) override {
    if (ctx.db == nullptr) return FailedPrecondition("auth needs PostgreSQL");
    const config::Config& cfg = *ctx.config;
    pool_ = ctx.db;
    clock_ = ctx.clock != nullptr ? ctx.clock : &Clock::Real();
    GOVERN_ASSIGN_OR_RETURN(services::ListenAddress listen,
                            services::ParseListen(cfg.GetString("auth.listen")));
    auto secs = [&](std::string_view key) {
      return std::chrono::duration_cast<std::chrono::seconds>(cfg.GetDuration(key));
    };
    rotation_ = {secs("auth.rotation.period"), secs("auth.rotation.publish_ahead"),
                 secs("auth.rotation.keep_after")};
    GOVERN_ASSIGN_OR_RETURN(id_alg_, tokens::ParseAlg(cfg.GetString("auth.id_token_alg")));
    internal_access_ = cfg.GetString("auth.access_token_signing") == "internal";
    ring_file_ = cfg.GetString("auth.internal_ring_file");
    if (ring_file_.empty()) ring_file_ = ctx.data_dir + "/auth/internal-ring.json";
    {
      std::error_code ec;  // the directory (the default one is also the storage key's)
      std::filesystem::create_directories(std::filesystem::path(ring_file_).parent_path(), ec);
      if (ec) return Unavailable("auth: the internal ring file's directory: " + ec.message());
    }
    auto key = LoadStorageKey(cfg.GetString("auth.storage_key"), ctx.data_dir + "/auth");
    if (!key.ok()) return key.status().WithContext("auth: storage key");
    storage_key_.emplace(std::move(*key));

    password_.argon2.memory_kib = static_cast<uint32_t>(cfg.GetBytes("auth.argon2.memory") / 1024);
    password_.argon2.passes = static_cast<uint32_t>(cfg.GetInt("auth.argon2.passes"));
    password_.argon2.lanes = static_cast<uint32_t>(cfg.GetInt("auth.argon2.lanes"));
    password_.limits.max_failures_account = static_cast<int>(cfg.GetInt("auth.rate_limit.account_failures"));
    password_.limits.max_failures_address = static_cast<int>(cfg.GetInt("auth.rate_limit.address_failures"));
    password_.limits.window_s = secs("auth.rate_limit.window").count();
    password_.limits.lockout_s = secs("auth.rate_limit.lockout").count();
    GOVERN_ASSIGN_OR_RETURN(password_.dummy_hash, MakeDummyHash(password_.argon2));
    if (cfg.GetBool("auth.trust_forwarded_for"))
      log::Warn("auth", "auth.trust_forwarded_for is ignored; list the proxies in auth.trusted_proxies");
    GOVERN_ASSIGN_OR_RETURN(trusted_proxies_, ParseCidrList(cfg.GetStringList("auth.trusted_proxies")));
    v4_prefix_ = static_cast<int>(cfg.GetInt("auth.limits.ipv4_prefix"));
    v6_prefix_ = static_cast<int>(cfg.GetInt("auth.limits.ipv6_prefix"));
    const auto capacity = static_cast<size_t>(cfg.GetInt("auth.limits.max_addresses"));
    signin_limiter_ = std::make_unique<AddressLimiter>(AddressLimiter::Options{
        .per_minute = static_cast<double>(cfg.GetInt("auth.limits.signin_per_minute")),
        .burst = static_cast<double>(cfg.GetInt("auth.limits.signin_burst")),
        .capacity = capacity});
    token_limiter_ = std::make_unique<AddressLimiter>(
        AddressLimiter::Options{.per_minute = static_cast<double>(cfg.GetInt("auth.limits.token_per_minute")),
                                .burst = static_cast<double>(cfg.GetInt("auth.limits.token_burst")),
                                .capacity = capacity});
    session_lifetime_s_ = secs("auth.session_lifetime").count();

    GOVERN_ASSIGN_OR_RETURN(net::ServerConfig sc, services::MakeServerConfig(ctx, "auth"));
    ProviderOptions po;
    po.issuer = cfg.GetString("auth.issuer");
    while (po.issuer.ends_with('/')) po.issuer.pop_back();
    po.default_audience = cfg.GetString("auth.default_audience");
    po.access_lifetime = secs("auth.access_token_lifetime");
    po.id_lifetime = secs("auth.id_token_lifetime");
    po.refresh_lifetime = secs("auth.refresh_token_lifetime");
    po.code_lifetime = secs("auth.code_lifetime");
    provider_options_ = po;

    http_ = std::make_unique<net::HttpClient>(net::ClientOptions{.connect_timeout = std::chrono::seconds(5),
                                                                 .request_timeout = std::chrono::seconds(10),
                                                                 .max_response_bytes = 1 << 20});
    workers_ = std::make_unique<services::JobQueue>(static_cast<int>(cfg.GetInt("auth.workers")), 2000);
    host_ = listen.host;
    server_ = std::make_unique<net::Server>(std::move(sc), Routes());
    // Bound before the keys are loaded so a development issuer (empty auth.issuer) can name the real
    // port when auth.listen asks for port 0; every handler answers 503 until ready_.
    GOVERN_RETURN_IF_ERROR(server_->Start().WithContext("auth: start HTTP server"));
    if (provider_options_.issuer.empty()) {
      provider_options_.issuer = "http://" + services::FormatListen(host_, server_->port());
    }
    secure_cookie_ = provider_options_.issuer.starts_with("https://");
    {
      // The issuer's origin (scheme://host[:port]) and host.
      const std::string& iss = provider_options_.issuer;
      size_t scheme_end = iss.find("://");
      size_t path = scheme_end == std::string::npos ? std::string::npos : iss.find('/', scheme_end + 3);
      std::string origin = iss.substr(0, path);
      std::string host = scheme_end == std::string::npos ? origin : origin.substr(scheme_end + 3);
      if (!host.empty() && host.front() == '[')
        host = host.substr(0, host.find(']') + 1);
      else
        host = host.substr(0, host.find(':'));
      rp_.id = cfg.GetString("auth.passkeys.rp_id").empty() ? host : cfg.GetString("auth.passkeys.rp_id");
      rp_.origins = cfg.GetStringList("auth.passkeys.origins");
      if (rp_.origins.empty()) rp_.origins = {origin};
    }
    GOVERN_RETURN_IF_ERROR(LoadKeys(/*first=*/true));
    provider_ = std::make_unique<Provider>(provider_options_, *issuer_, *checker_, *clock_, external_.get());
    discovery_ = Discovery();
    ready_.store(true, std::memory_order_release);
    check_every_ = cfg.GetDuration("auth.rotation.check_every");
    ticker_ = std::thread([this] { Tick(); });
    log::Info(
        "auth", "listening",
        {{"address", services::FormatListen(host_, server_->port())}, {"issuer", provider_options_.issuer}});
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    if (!server_) return {};
    return {{"auth", "http", services::FormatListen(host_, server_->port())}};
  }

  void Stop() override {
    {
      std::lock_guard lk(tick_mu_);
      stopping_ = true;
    }
    tick_cv_.notify_all();
    if (ticker_.joinable()) ticker_.join();
    if (server_) server_->Stop();
    if (workers_) workers_->Stop();
    server_.reset();
    workers_.reset();
  }

 private:
  // ---- keys ----
  Status LoadKeys(bool first) {
    auto lease = pool_->Checkout();
    if (!lease.ok()) return lease.status();
    int64_t now = clock_->UnixMicros() / 1'000'000;
    auto rings = LoadAndRotate(**lease, *storage_key_, id_alg_, rotation_, now);
    if (!rings.ok()) return rings.status().WithContext("auth: signing keys");
    tokens::KeySet access_keys = rings->access->VerifyKeysAt(now), id_keys = rings->id->VerifyKeysAt(now);
    std::vector<tokens::VerifyKey> all = access_keys.keys();
    for (const auto& k : id_keys.keys()) all.push_back(k);
    auto keyset = std::make_shared<const tokens::KeySet>(std::move(all));
    auto jwks = rings->id->JwksAt(now);
    if (!jwks.ok()) return jwks.status();
    if (first) {
      issuer_ =
          std::make_unique<tokens::Issuer>(tokens::IssuerOptions{provider_options_.issuer},
                                           internal_access_ ? rings->access : rings->id, rings->id, *clock_);
      external_ = std::make_unique<tokens::Issuer>(tokens::IssuerOptions{provider_options_.issuer}, rings->id,
                                                   rings->id, *clock_);
      checker_ = std::make_unique<tokens::Checker>(tokens::CheckerOptions{.issuer = provider_options_.issuer},
                                                   keyset, *clock_);
      published_checker_ = std::make_unique<tokens::Checker>(
          tokens::CheckerOptions{.issuer = provider_options_.issuer},
          std::make_shared<const tokens::KeySet>(std::move(id_keys)), *clock_);
    } else {
      issuer_->SetRings(internal_access_ ? rings->access : rings->id, rings->id);
      external_->SetRings(rings->id, rings->id);
      checker_->SetKeys(keyset);  // also drops keys past their overlap at once
      published_checker_->SetKeys(std::make_shared<const tokens::KeySet>(std::move(id_keys)));
    }
    jwks_.store(std::make_shared<const std::string>(std::move(*jwks)));
    if (rings->changed) log::Info("auth", "signing keys created or rotated", {});
    // The internal ring to the services' key configuration: at start (a deleted or stale file is put
    // right) and whenever it changed, here or by another replica (read back from PostgreSQL above).
    if (auto bytes = rings->access->Serialize(); !bytes.ok()) {
      return bytes.status();
    } else if (first || !crypto::ConstantTimeEquals(bytes->span(), ring_written_.span())) {
      // A failed write leaves ring_written_ as it was, so the next tick retries; it must not skip the
      // revocation reload below (this replica would stop honouring revocations). At start it is fatal.
      if (Status w = tokens::WriteRingFile(ring_file_, *rings->access); !w.ok()) {
        if (first) return w.WithContext("auth: writing the internal ring file");
        log::Error("auth", "writing the internal ring file failed; retrying on the next tick",
                   {{"path", ring_file_}, {"error", w.ToString()}});
      } else {
        ring_written_ = std::move(*bytes);
        log::Info("auth", "internal ring file written",
                  {{"path", ring_file_}, {"keys", static_cast<int64_t>(rings->access->keys().size())}});
      }
    }
    return ReloadRevocations(**lease);
  }

  Status ReloadRevocations(db::Connection& c) {
    auto text =
        provider_ ? provider_->RevocationListJson(c) : Result<std::string>(std::string("{\"version\":0}"));
    if (!provider_) {
      // At first start the provider is made after the keys; read the list directly then.
      Provider p(provider_options_, *issuer_, *checker_, *clock_);
      text = p.RevocationListJson(c);
    }
    if (!text.ok()) return text.status();
    auto list = tokens::RevocationList::FromJson(*text);
    if (!list.ok()) return list.status();
    // If not older: the periodic reload and a request that revoked something (a reused refresh
    // token) reload at once, and the reload that read first must not put back the list without it.
    // The version counts revocations in commit order (auth schema migration 8).
    auto shared = std::make_shared<const tokens::RevocationList>(std::move(*list));
    checker_->SetRevocationsIfNotOlder(shared);
    published_checker_->SetRevocationsIfNotOlder(std::move(shared));
    return OkStatus();
  }

  // Deletes what can no longer matter: used or expired codes, challenges and sessions, rate-limit
  // windows that closed, revocations of tokens that expired, refresh families past their lifetime.
  Status Sweep() {
    auto lease = pool_->Checkout();
    if (!lease.ok()) return lease.status();
    int64_t now = clock_->UnixMicros() / 1'000'000;
    const std::pair<const char*, int64_t> statements[] = {
        {"DELETE FROM auth_codes WHERE expires_at < $1", now - 3600},
        {"DELETE FROM auth_challenges WHERE expires_at < $1", now},
        {"DELETE FROM auth_sessions WHERE expires_at < $1", now},
        {"DELETE FROM auth_rate_limits WHERE locked_until < $1 AND window_start < $1",
         now - std::max(password_.limits.window_s, password_.limits.lockout_s)},
        {"DELETE FROM auth_revocations WHERE expires_at < $1", now - 3600},
        {"DELETE FROM auth_refresh_families WHERE expires_at < $1", now},
    };
    for (const auto& [sql, t] : statements)
      GOVERN_RETURN_IF_ERROR((*lease)->Exec(sql, db::Params(t)).status());
    return OkStatus();
  }

  void Tick() {
    std::unique_lock lk(tick_mu_);
    while (!stopping_) {
      tick_cv_.wait_for(lk, check_every_, [&] { return stopping_; });
      if (stopping_) break;
      lk.unlock();
      Status s = LoadKeys(/*first=*/false);
      if (!s.ok()) log::Warn("auth", "key schedule or revocation reload failed", {{"error", s.message()}});
      s = Sweep();
      if (!s.ok()) log::Warn("auth", "sweeping expired rows failed", {{"error", s.message()}});
      lk.lock();
    }
  }

  std::string Discovery() const {
    const std::string& iss = provider_options_.issuer;
    json d = {
        {"issuer", iss},
        {"authorization_endpoint", iss + "/oauth/authorize"},
        {"token_endpoint", iss + "/oauth/token"},
        {"userinfo_endpoint", iss + "/oauth/userinfo"},
        {"jwks_uri", iss + "/oauth/jwks"},
        {"introspection_endpoint", iss + "/oauth/introspect"},
        {"revocation_endpoint", iss + "/oauth/revoke"},
        {"response_types_supported", {"code"}},
        {"response_modes_supported", {"query"}},
        {"grant_types_supported",
         {"authorization_code", "client_credentials", "refresh_token",
          "urn:ietf:params:oauth:grant-type:token-exchange"}},
        {"subject_types_supported", {"public"}},
        {"id_token_signing_alg_values_supported", {tokens::AlgName(id_alg_)}},
        {"token_endpoint_auth_methods_supported", {"client_secret_basic", "client_secret_post", "none"}},
        {"introspection_endpoint_auth_methods_supported", {"client_secret_basic", "client_secret_post"}},
        {"revocation_endpoint_auth_methods_supported", {"client_secret_basic", "client_secret_post", "none"}},
        {"code_challenge_methods_supported", {"S256"}},
        {"scopes_supported", {"openid", "email", "profile", "groups"}},
        {"claims_supported",
         {"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "org", "email", "name"}},
        {"authorization_response_iss_parameter_supported", true}};
    return d.dump();
  }

  // ---- routing ----
  using JobBody = std::function<net::Response(db::Connection&, net::Request&)>;

  // Runs `body` on a worker with a pooled connection; 503 when the queue is full.
  void Run(net::Request&& req, net::Responder r, JobBody body) {
    if (!ready_.load(std::memory_order_acquire)) return r.Send(NotReady());
    auto shared = std::make_shared<std::pair<net::Request, net::Responder>>(std::move(req), std::move(r));
    bool posted = workers_ && workers_->Post([this, shared, body = std::move(body)] {
      auto lease = pool_->Checkout();
      if (!lease.ok()) {
        shared->second.Send(NoStore(net::Response(
            503, R"({"error":"temporarily_unavailable","error_description":"the auth store is unavailable"})",
            "application/json")));
        return;
      }
      shared->second.Send(body(**lease, shared->first));
    });
    if (!posted) {
      net::Response busy(503,
                         R"({"error":"temporarily_unavailable","error_description":"too many requests"})",
                         "application/json");
      busy.headers.Set("Retry-After", "1");
      shared->second.Send(std::move(busy));
    }
  }

  net::Router Routes() {
    net::Router router;
    // Sign-in and token traffic is interactive (a person or an agent waits): it keeps headroom when
    // bulk work is shed (net/admission.h).
    const net::RouteOptions interactive{.cls = net::RequestClass::kInteractive, .max_body_bytes = 64 * 1024};
    auto opts = [&](std::string name, net::RequestClass cls = net::RequestClass::kInteractive) {
      net::RouteOptions o = interactive;
      o.cls = cls;
      o.name = std::move(name);
      return o;
    };
    router.AddSync(
        net::Method::kGet, "/.well-known/openid-configuration",
        [this](net::Request&) {
          if (!ready_.load(std::memory_order_acquire)) return NotReady();
          net::Response r = net::JsonResponse(discovery_);
          r.headers.Set("Cache-Control", "max-age=300");
          return r;
        },
        opts("auth_discovery"));
    router.AddSync(
        net::Method::kGet, "/.well-known/oauth-authorization-server",
        [this](net::Request&) {
          if (!ready_.load(std::memory_order_acquire)) return NotReady();
          return net::JsonResponse(discovery_);
        },
        opts("auth_metadata"));
    // Also at /.well-known/jwks.json, where tokens::TrustRefresher looks by default (docs/tokens.md).
    for (const char* path : {"/oauth/jwks", "/.well-known/jwks.json"}) {
      router.AddSync(
          net::Method::kGet, path,
          [this](net::Request&) {
            if (!ready_.load(std::memory_order_acquire)) return NotReady();
            auto j = jwks_.load();
            net::Response r(200, j ? *j : std::string("{\"keys\":[]}"), "application/jwk-set+json");
            r.headers.Set("Cache-Control", "max-age=300");
            return r;
          },
          opts("auth_jwks"));
    }
    router.Add(
        net::Method::kPost, "/oauth/token",
        [this](net::Request&& req, net::Responder r) {
          if (!ready_.load(std::memory_order_acquire)) return r.Send(NotReady());
          std::string key = AddressKey(req);
          if (int64_t wait = OverLimit(*token_limiter_, key, "token"); wait > 0)
            return r.Send(TokenLimited(wait));
          Run(std::move(req), std::move(r), [this, key](db::Connection& c, net::Request& q) {
            Attempt attempt = Begin(*token_limiter_, key, "token");
            if (attempt.wait > 0) return TokenLimited(attempt.wait);
            Reply reply = provider_->Token(c, q.body, q.headers.Get("Authorization"));
            if (reply.revoked) (void)ReloadRevocations(c);  // a reused refresh token revoked its family
            if (reply.status == 401 && reply.basic_challenge) Failed(attempt);
            Settle(attempt);
            return FromReply(reply);
          });
        },
        opts("auth_token"));
    router.Add(
        net::Method::kPost, "/oauth/introspect",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r), [this](db::Connection& c, net::Request& q) {
            return FromReply(provider_->Introspect(c, q.body, q.headers.Get("Authorization")));
          });
        },
        opts("auth_introspect", net::RequestClass::kNormal));
    router.Add(
        net::Method::kPost, "/oauth/revoke",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r), [this](db::Connection& c, net::Request& q) {
            Reply reply = provider_->Revoke(c, q.body, q.headers.Get("Authorization"));
            if (reply.revoked) (void)ReloadRevocations(c);
            return FromReply(reply);
          });
        },
        opts("auth_revoke", net::RequestClass::kNormal));
    router.Add(
        net::Method::kGet, "/oauth/revocations",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r), [this](db::Connection& c, net::Request& q) {
            auto text = provider_->RevocationListJson(c);
            if (!text.ok()) return StatusProblem(text.status(), q);
            return NoStore(net::JsonResponse(*text));
          });
        },
        opts("auth_revocations", net::RequestClass::kNormal));
    for (net::Method m : {net::Method::kGet, net::Method::kPost}) {
      router.Add(
          m, "/oauth/userinfo",
          [this](net::Request&& req, net::Responder r) {
            Run(std::move(req), std::move(r), [this](db::Connection& c, net::Request& q) {
              return FromReply(provider_->UserInfo(c, BearerOf(q)));
            });
          },
          opts("auth_userinfo", net::RequestClass::kNormal));
    }
    router.Add(
        net::Method::kGet, "/oauth/authorize",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r),
              [this](db::Connection& c, net::Request& q) { return AuthorizeGet(c, q); });
        },
        opts("auth_authorize"));
    router.Add(
        net::Method::kPost, "/oauth/authorize",
        [this](net::Request&& req, net::Responder r) {
          if (!ready_.load(std::memory_order_acquire)) return r.Send(NotReady());
          std::string key = AddressKey(req);
          if (int64_t wait = OverLimit(*signin_limiter_, key, "password"); wait > 0)
            return r.Send(SignInLimitedPage(wait));
          Run(std::move(req), std::move(r), [this, key](db::Connection& c, net::Request& q) {
            // Again when a worker picks it up, this time taking the token (check and take in one step):
            // requests queued together passed the first check together, and only as many as the
            // bucket holds may run (and cost a password hash) at once.
            Attempt attempt = Begin(*signin_limiter_, key, "password");
            if (attempt.wait > 0) return SignInLimitedPage(attempt.wait);
            net::Response out = AuthorizePost(c, q, attempt);
            Settle(attempt);
            return out;
          });
        },
        opts("auth_signin"));
    router.Add(
        net::Method::kPost, "/oauth/authorize/totp",
        [this](net::Request&& req, net::Responder r) {
          if (!ready_.load(std::memory_order_acquire)) return r.Send(NotReady());
          std::string key = AddressKey(req);
          if (int64_t wait = OverLimit(*signin_limiter_, key, "totp"); wait > 0)
            return r.Send(SignInLimitedPage(wait));
          Run(std::move(req), std::move(r), [this, key](db::Connection& c, net::Request& q) {
            // Again when a worker picks it up, this time taking the token (check and take in one step):
            // requests queued together passed the first check together, and only as many as the
            // bucket holds may run (and cost a password hash) at once.
            Attempt attempt = Begin(*signin_limiter_, key, "totp");
            if (attempt.wait > 0) return SignInLimitedPage(attempt.wait);
            net::Response out = AuthorizeTotp(c, q, attempt);
            Settle(attempt);
            return out;
          });
        },
        opts("auth_signin_totp"));
    router.AddSync(
        net::Method::kGet, "/oauth/signin.js",
        [](net::Request&) {
          net::Response r(200, std::string(kSignInScript), "text/javascript; charset=utf-8");
          r.headers.Set("Cache-Control", "max-age=300");
          r.headers.Set("X-Content-Type-Options", "nosniff");
          return r;
        },
        opts("auth_signin_script"));
    router.Add(
        net::Method::kPost, "/oauth/passkey/options",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r), [this](db::Connection& c, net::Request& q) {
            auto ch = BeginPasskeySignIn(c, rp_, clock_->UnixMicros() / 1'000'000);
            if (!ch.ok()) return StatusProblem(ch.status(), q);
            json options = json::parse(ch->options_json, nullptr, false);
            return NoStore(net::JsonResponse(json{{"handle", ch->handle}, {"publicKey", options}}.dump()));
          });
        },
        opts("auth_passkey_options"));
    router.Add(
        net::Method::kPost, "/oauth/authorize/passkey",
        [this](net::Request&& req, net::Responder r) {
          if (!ready_.load(std::memory_order_acquire)) return r.Send(NotReady());
          std::string key = AddressKey(req);
          if (int64_t wait = OverLimit(*signin_limiter_, key, "passkey"); wait > 0)
            return r.Send(SignInLimitedPage(wait));
          Run(std::move(req), std::move(r), [this, key](db::Connection& c, net::Request& q) {
            // Again when a worker picks it up, this time taking the token (check and take in one step):
            // requests queued together passed the first check together, and only as many as the
            // bucket holds may run (and cost a password hash) at once.
            Attempt attempt = Begin(*signin_limiter_, key, "passkey");
            if (attempt.wait > 0) return SignInLimitedPage(attempt.wait);
            net::Response out = AuthorizePasskey(c, q, attempt);
            Settle(attempt);
            return out;
          });
        },
        opts("auth_signin_passkey"));
    router.Add(
        net::Method::kGet, "/oauth/sso",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r),
              [this](db::Connection& c, net::Request& q) { return SsoStart(c, q); });
        },
        opts("auth_sso_start"));
    router.Add(
        net::Method::kGet, "/oauth/sso/callback",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r),
              [this](db::Connection& c, net::Request& q) { return SsoCallback(c, q); });
        },
        opts("auth_sso_callback"));
    AddSelfRoutes(router);
    AddAdminRoutes(router);
    return router;
  }

  // ---- authorization endpoint ----
  // Checks the client and redirect URI (errors shown as a page: never redirect to an unchecked URI),
  // then the rest (errors redirected to the client, RFC 6749 section 4.1.2.1). Returns the client.
  std::optional<Client> CheckAuthorize(db::Connection& c, const AuthorizeParams& p, net::Response* out) {
    auto client = FindClient(c, p.client_id);
    if (!client.ok()) {
      *out = Page(503, "Unavailable", "<p>The sign-in service is unavailable. Retry later.</p>");
      return std::nullopt;
    }
    if (!*client || (*client)->disabled || (*client)->kind != ClientKind::kApp) {
      *out = Page(400, "Unknown application", "<p>This application is not registered.</p>");
      return std::nullopt;
    }
    if (!(*client)->HasRedirect(p.redirect_uri)) {
      *out =
          Page(400, "Wrong redirect URI", "<p>The redirect URI is not registered for this application.</p>");
      return std::nullopt;
    }
    auto fail = [&](std::string_view error, std::string_view why) {
      *out = RedirectError(p, error, why);
      return std::nullopt;
    };
    if (p.response_type != "code") return fail("unsupported_response_type", "only response_type=code");
    if (p.code_challenge.empty() || p.code_challenge_method != "S256")
      return fail("invalid_request", "PKCE with code_challenge_method=S256 is required");
    if (p.code_challenge.size() != 43)
      return fail("invalid_request", "code_challenge is not a SHA-256 in base64url");
    std::istringstream words(p.scope);
    std::string w;
    while (words >> w) {
      if (!(*client)->AllowsScope(w)) return fail("invalid_scope", "scope " + w + " is not allowed");
    }
    return **client;
  }

  std::string Redirect(const AuthorizeParams& p, const std::string& query) const {
    std::string q = query;
    if (!p.state.empty()) q += "&state=" + FormEncode(p.state);
    q += "&iss=" + FormEncode(provider_options_.issuer);  // RFC 9207
    return p.redirect_uri + (p.redirect_uri.find('?') == std::string::npos ? "?" : "&") + q;
  }

  net::Response RedirectError(const AuthorizeParams& p, std::string_view error, std::string_view why) const {
    net::Response r(302, "");
    r.headers.Set("Location",
                  Redirect(p, "error=" + FormEncode(error) + "&error_description=" + FormEncode(why)));
    return NoStore(std::move(r));
  }

  net::Response IssueCode(db::Connection& c, const Client& client, const AuthorizeParams& p,
                          const std::string& user_id, int64_t auth_time, const std::string& set_cookie) {
    CodeGrant g{client.client_id, user_id, p.redirect_uri, p.scope, p.nonce, p.code_challenge, auth_time};
    auto code = provider_->NewCode(c, g);
    if (!code.ok()) return RedirectError(p, "temporarily_unavailable", "could not store the code");
    net::Response r(302, "");
    r.headers.Set("Location", Redirect(p, "code=" + FormEncode(*code)));
    if (!set_cookie.empty()) r.headers.Add("Set-Cookie", set_cookie);
    return NoStore(std::move(r));
  }

  net::Response AuthorizeGet(db::Connection& c, net::Request& q) {
    std::map<std::string, std::string, std::less<>> m;
    for (auto& [k, v] : q.QueryParams()) {
      if (!m.emplace(k, v).second) return Page(400, "Bad request", "<p>A parameter is repeated.</p>");
    }
    AuthorizeParams p = AuthorizeParams::From(m);
    p.csrf.clear();  // never taken from the query
    net::Response out;
    auto client = CheckAuthorize(c, p, &out);
    if (!client) return out;
    if (p.prompt != "login") {
      if (auto cookie = CookieOf(q, kSessionCookie)) {
        int64_t now = clock_->UnixMicros() / 1'000'000;
        auto rows = c.ExecPrepared(
            "SELECT s.user_id, s.auth_time FROM auth_sessions s JOIN auth_users u USING (user_id) "
            "WHERE s.session_hash = $1 AND s.expires_at > $2 AND NOT u.disabled AND u.org = $3",
            db::Params(HashHex(*cookie), now, client->org));
        if (rows.ok() && !rows->empty()) {
          auto auth_time = rows->Int64(0, 1);
          return IssueCode(c, *client, p, std::string(rows->Text(0, 0)), auth_time.ok() ? *auth_time : now,
                           "");
        }
      }
    }
    if (p.prompt == "none") return RedirectError(p, "login_required", "the user is not signed in");
    // Login CSRF: the form posts only with the token this page set as a SameSite=Strict cookie.
    auto csrf = NewSecret("gvx_");
    if (!csrf.ok())
      return Page(503, "Unavailable", "<p>The sign-in service is unavailable. Retry later.</p>");
    p.csrf = *csrf;
    net::Response page = SignInPage(200, p, "", "");
    page.headers.Add("Set-Cookie", std::string(kCsrfCookie) + "=" + *csrf +
                                       "; Path=/oauth; HttpOnly; SameSite=Strict" +
                                       (secure_cookie_ ? "; Secure" : ""));
    return page;
  }

  // The limiter key of the request's client (limiter.h ClientAddress, masked to its prefix); empty when
  // there is no address (a Unix socket: the caller is local and already trusted with the socket).
  std::string AddressKey(const net::Request& q) const {
    // Every X-Forwarded-For line in order, as one list (RFC 9110 5.3): a proxy that adds its own line
    // instead of appending would otherwise leave the client's own line first, and that one is forged.
    std::optional<std::string> xff;
    for (const auto& [name, value] : q.headers.fields()) {
      if (!net::EqualsIgnoreCase(name, "X-Forwarded-For")) continue;
      xff = xff ? *xff + ", " + value : value;
    }
    // A link-local IPv6 peer carries its zone ("fe80::1%eth0"); the address alone is what is limited.
    std::string_view peer = q.peer_ip;
    peer = peer.substr(0, peer.find('%'));
    auto a =
        ClientAddress(peer, xff ? std::optional<std::string_view>(*xff) : std::nullopt, trusted_proxies_);
    return a ? LimitKey(*a, v4_prefix_, v6_prefix_) : std::string();
  }

  // Seconds `key` must wait before another attempt at `what` (0: go ahead). Checked before the request
  // takes a worker or a database connection, so a flood of refused guesses costs a hash lookup each.
  int64_t OverLimit(AddressLimiter& limiter, const std::string& key, std::string_view what) {
    if (key.empty()) return 0;
    int64_t wait = limiter.Check(key, clock_->UnixMicros());
    if (wait > 0)
      log::Info("auth", "refused: client address over its limit",
                {{"what", std::string(what)}, {"address", key}, {"retry_after", wait}});
    return wait;
  }

  // One attempt holding a token of its address's bucket while it runs (AddressLimiter::Acquire).
  struct Attempt {
    AddressLimiter* limiter = nullptr;
    std::string key;  // empty: not limited (no client address)
    std::string_view what;
    int64_t wait = 0;  // > 0: refused, nothing taken
    bool failed = false;
  };

  // Takes the attempt's token in the same step as the check, so the workers cannot all pass the last one.
  Attempt Begin(AddressLimiter& limiter, const std::string& key, std::string_view what) {
    Attempt a{&limiter, key, what};
    if (key.empty()) return a;
    a.wait = limiter.Acquire(key, clock_->UnixMicros());
    if (a.wait > 0)
      log::Info("auth", "refused: client address over its limit",
                {{"what", std::string(what)}, {"address", key}, {"retry_after", a.wait}});
    return a;
  }

  // The attempt failed: its token stays spent; logs when that left the bucket empty.
  void Failed(Attempt& a) {
    a.failed = true;
    if (a.key.empty()) return;
    int64_t wait = a.limiter->Check(a.key, clock_->UnixMicros());
    if (wait > 0)
      log::Warn("auth", "client address reached its limit of failed attempts",
                {{"what", std::string(a.what)}, {"address", a.key}, {"retry_after", wait}});
  }

  // Only failures cost: an attempt that did not fail gives its token back.
  void Settle(const Attempt& a) {
    if (!a.key.empty() && a.wait == 0 && !a.failed) a.limiter->Refund(a.key, clock_->UnixMicros());
  }

  // The HTML answer to a sign-in over the address limit: the browser user reads why and how long.
  static net::Response SignInLimitedPage(int64_t wait) {
    net::Response page =
        Page(429, "Too many attempts",
             "<p id=\"error\" role=\"alert\">Too many failed sign-in attempts came from your "
             "network. Wait " +
                 std::to_string(wait) + " seconds, then start again from the application.</p>");
    page.headers.Set("Retry-After", std::to_string(wait));
    return NoStore(std::move(page));
  }

  // The token endpoint's answer over the address limit: 429 with Retry-After and an RFC 6749 error body.
  static net::Response TokenLimited(int64_t wait) {
    Reply reply = OAuthError(429, "temporarily_unavailable",
                             "too many failed client authentications from this address; retry later");
    reply.retry_after = static_cast<int>(wait);
    return FromReply(reply);
  }

  static bool CsrfOk(const net::Request& q, const AuthorizeParams& p) {
    auto cookie = CookieOf(q, kCsrfCookie);
    return cookie && !p.csrf.empty() && crypto::ConstantTimeEquals(*cookie, p.csrf);
  }

  net::Response AuthorizePost(db::Connection& c, net::Request& q, Attempt& attempt) {
    auto form = Form::Parse(q.body);
    if (!form.ok()) return Page(400, "Bad request", "<p>" + HtmlEscape(form.status().message()) + "</p>");
    AuthorizeParams p = AuthorizeParams::From(form->values());
    net::Response out;
    auto client = CheckAuthorize(c, p, &out);
    if (!client) return out;
    if (!CsrfOk(q, p))
      return Page(403, "Sign-in expired",
                  "<p>This sign-in form expired. Start again from the application.</p>");
    std::string email = form->GetOr("email");
    int64_t now = clock_->UnixMicros() / 1'000'000;
    SignInResult r =
        SignInWithPassword(c, password_, client->org, email, form->GetOr("password"), attempt.key, now);
    if (r.status.code() == Code::kResourceExhausted) {
      net::Response page = SignInPage(429, p, "Too many failed sign-ins. Try again later.", email);
      page.headers.Set("Retry-After", std::to_string(r.retry_after));
      return page;
    }
    if (r.status.code() == Code::kUnauthenticated) {
      Failed(attempt);
      return SignInPage(401, p, "Invalid email or password.", email);
    }
    if (!r.status.ok())
      return Page(503, "Unavailable", "<p>The sign-in service is unavailable. Retry later.</p>");
    log::Info("auth", "password accepted",
              {{"user", r.user.user_id}, {"org", r.user.org}, {"rehashed", r.rehashed}});
    auto totp = HasTotp(c, r.user.user_id);
    if (!totp.ok())
      return Page(503, "Unavailable", "<p>The sign-in service is unavailable. Retry later.</p>");
    if (*totp) return TotpPage(c, 200, p, r.user.user_id, now, "");
    return FinishSignIn(c, *client, p, r.user.user_id, now);
  }

  // Session cookie and code once every factor passed.
  net::Response FinishSignIn(db::Connection& c, const Client& client, const AuthorizeParams& p,
                             const std::string& user_id, int64_t now) {
    auto session = NewSecret("gvs_");
    std::string cookie;
    if (session.ok() && c.Exec("INSERT INTO auth_sessions (session_hash, user_id, auth_time, expires_at) "
                               "VALUES ($1, $2, $3, $4)",
                               db::Params(HashHex(*session), user_id, now, now + session_lifetime_s_))
                            .ok()) {
      cookie = std::string(kSessionCookie) + "=" + *session +
               "; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age=" + std::to_string(session_lifetime_s_) +
               (secure_cookie_ ? "; Secure" : "");
    }
    log::Info("auth", "signed in", {{"user", user_id}, {"org", client.org}});
    return IssueCode(c, client, p, user_id, now, cookie);
  }

  // The second step: a single-use, short-lived challenge holds the authorization request and the user
  // whose password passed; the page asks for the code.
  net::Response TotpPage(db::Connection& c, int status, const AuthorizeParams& p, const std::string& user_id,
                         int64_t now, std::string_view message) {
    auto token = NewSecret("gvm_");
    json payload = {{"client_id", p.client_id},
                    {"redirect_uri", p.redirect_uri},
                    {"response_type", p.response_type},
                    {"scope", p.scope},
                    {"state", p.state},
                    {"nonce", p.nonce},
                    {"code_challenge", p.code_challenge},
                    {"code_challenge_method", p.code_challenge_method}};
    if (!token.ok() ||
        !c.Exec("INSERT INTO auth_challenges (challenge_hash, kind, user_id, payload, expires_at) "
                "VALUES ($1, 'totp', $2, $3, $4)",
                db::Params(HashHex(*token), user_id, payload.dump(), now + 300))
             .ok()) {
      return Page(503, "Unavailable", "<p>The sign-in service is unavailable. Retry later.</p>");
    }
    std::string body;
    if (!message.empty()) body += "<p id=\"error\" role=\"alert\">" + HtmlEscape(message) + "</p>\n";
    body +=
        "<form method=\"post\" action=\"/oauth/authorize/totp\">\n<input type=\"hidden\" name=\"mfa\" "
        "value=\"" +
        HtmlEscape(*token) +
        "\">\n<label>Code <input name=\"code\" inputmode=\"numeric\" autocomplete=\"one-time-code\" "
        "required></label>\n<button type=\"submit\">Continue</button>\n</form>\n";
    return Page(status, "Second factor", body, OriginOf(p.redirect_uri));
  }

  net::Response AuthorizeTotp(db::Connection& c, net::Request& q, Attempt& attempt) {
    auto form = Form::Parse(q.body);
    if (!form.ok()) return Page(400, "Bad request", "<p>" + HtmlEscape(form.status().message()) + "</p>");
    int64_t now = clock_->UnixMicros() / 1'000'000;
    auto rows = c.Exec(
        "DELETE FROM auth_challenges WHERE challenge_hash = $1 AND kind = 'totp' AND expires_at > $2 "
        "RETURNING user_id, payload",
        db::Params(HashHex(form->GetOr("mfa")), now));
    if (!rows.ok())
      return Page(503, "Unavailable", "<p>The sign-in service is unavailable. Retry later.</p>");
    if (rows->empty())
      return Page(400, "Sign-in expired", "<p>This sign-in expired. Start again from the application.</p>");
    std::string user_id(rows->Text(0, 0));
    json payload = json::parse(rows->Text(0, 1), nullptr, false);
    std::map<std::string, std::string, std::less<>> m;
    if (payload.is_object()) {
      for (auto& [k, v] : payload.items()) {
        if (v.is_string()) m[k] = v.get<std::string>();
      }
    }
    AuthorizeParams p = AuthorizeParams::From(m);
    net::Response out;
    auto client = CheckAuthorize(c, p, &out);
    if (!client) return out;
    int64_t retry_after = 0;
    Status s = CheckTotp(c, *storage_key_, password_.limits, user_id, form->GetOr("code"), now, &retry_after);
    if (s.code() == Code::kResourceExhausted) {
      net::Response page = Page(429, "Too many attempts", "<p>Too many wrong codes. Try again later.</p>");
      page.headers.Set("Retry-After", std::to_string(retry_after));
      return page;
    }
    if (s.code() == Code::kUnauthenticated) {
      Failed(attempt);
      return TotpPage(c, 401, p, user_id, now, "Wrong or already used code.");
    }
    if (!s.ok()) return Page(503, "Unavailable", "<p>The sign-in service is unavailable. Retry later.</p>");
    return FinishSignIn(c, *client, p, user_id, now);
  }

  // A passkey sign-in inside an authorization request: the form carries the authorization parameters,
  // `handle` (from /oauth/passkey/options) and `credential` (the browser's credential.toJSON()). A
  // passkey with user verification is both factors: no TOTP step follows.
  net::Response AuthorizePasskey(db::Connection& c, net::Request& q, Attempt& attempt) {
    auto form = Form::Parse(q.body);
    if (!form.ok()) return Page(400, "Bad request", "<p>" + HtmlEscape(form.status().message()) + "</p>");
    AuthorizeParams p = AuthorizeParams::From(form->values());
    net::Response out;
    auto client = CheckAuthorize(c, p, &out);
    if (!client) return out;
    if (!CsrfOk(q, p))
      return Page(403, "Sign-in expired",
                  "<p>This sign-in form expired. Start again from the application.</p>");
    auto response = webauthn::ParseAssertionResponseJson(form->GetOr("credential"));
    if (!response.ok()) return Page(400, "Bad request", "<p>The passkey answer is malformed.</p>");
    int64_t now = clock_->UnixMicros() / 1'000'000;
    auto user = FinishPasskeySignIn(c, rp_, form->GetOr("handle"), *response, now);
    if ((!user.ok() && user.status().code() == Code::kUnauthenticated) ||
        (user.ok() && user->org != client->org)) {
      Failed(attempt);
      return SignInPage(401, p, "The passkey was not accepted.", "");
    }
    if (!user.ok())
      return Page(503, "Unavailable", "<p>The sign-in service is unavailable. Retry later.</p>");
    return FinishSignIn(c, *client, p, user->user_id, now);
  }

  // ---- single sign-on through the organisation's outside provider ----
  struct ProviderMetadata {
    std::string authorization_endpoint, token_endpoint, jwks_uri, userinfo_endpoint;
  };
  Result<ProviderMetadata> Discover(const std::string& issuer) {
    auto r = http_->Get(issuer + "/.well-known/openid-configuration");
    if (!r.ok()) return Unavailable("the provider did not answer: " + r.status().message());
    json d = json::parse(r->body, nullptr, false);
    if (r->status != 200 || !d.is_object() || d.value("issuer", "") != issuer)
      return Unavailable("the provider's discovery document is unusable");
    return ProviderMetadata{d.value("authorization_endpoint", ""), d.value("token_endpoint", ""),
                            d.value("jwks_uri", ""), d.value("userinfo_endpoint", "")};
  }

  std::string SsoRedirect() const { return provider_options_.issuer + "/oauth/sso/callback"; }

  net::Response SsoStart(db::Connection& c, net::Request& q) {
    std::map<std::string, std::string, std::less<>> m;
    for (auto& [k, v] : q.QueryParams()) {
      if (!m.emplace(k, v).second) return Page(400, "Bad request", "<p>A parameter is repeated.</p>");
    }
    AuthorizeParams p = AuthorizeParams::From(m);
    p.csrf.clear();
    net::Response out;
    auto client = CheckAuthorize(c, p, &out);
    if (!client) return out;
    auto provider = GetSsoProvider(c, *storage_key_, client->org);
    if (!provider.ok() || !*provider)
      return Page(400, "No single sign-on", "<p>This organisation has no sign-on provider.</p>");
    auto meta = Discover((*provider)->issuer);
    if (!meta.ok()) return Page(502, "Provider unavailable", "<p>The sign-on provider is unavailable.</p>");
    auto state = NewSecret("");
    auto nonce = NewSecret("");
    auto verifier = NewSecret("");
    if (!state.ok() || !nonce.ok() || !verifier.ok()) return Page(503, "Unavailable", "<p>Retry later.</p>");
    int64_t now = clock_->UnixMicros() / 1'000'000;
    json payload = {{"client_id", p.client_id},
                    {"redirect_uri", p.redirect_uri},
                    {"response_type", p.response_type},
                    {"scope", p.scope},
                    {"state", p.state},
                    {"nonce", p.nonce},
                    {"code_challenge", p.code_challenge},
                    {"code_challenge_method", p.code_challenge_method},
                    {"sso_nonce", *nonce},
                    {"sso_verifier", *verifier},
                    {"org", client->org}};
    if (!c.Exec("INSERT INTO auth_challenges (challenge_hash, kind, payload, expires_at) VALUES ($1, 'sso', "
                "$2, $3)",
                db::Params(HashHex(*state), payload.dump(), now + 600))
             .ok())
      return Page(503, "Unavailable", "<p>Retry later.</p>");
    std::string url = meta->authorization_endpoint +
                      (meta->authorization_endpoint.find('?') == std::string::npos ? "?" : "&") +
                      "response_type=code&client_id=" + FormEncode((*provider)->client_id) +
                      "&redirect_uri=" + FormEncode(SsoRedirect()) + "&scope=" + FormEncode("openid email") +
                      "&state=" + FormEncode(*state) + "&nonce=" + FormEncode(*nonce) +
                      "&code_challenge=" + S256(*verifier) + "&code_challenge_method=S256";
    net::Response r(302, "");
    r.headers.Set("Location", url);
    return NoStore(std::move(r));
  }

  net::Response SsoCallback(db::Connection& c, net::Request& q) {
    auto fail = [](std::string_view why) {
      return Page(401, "Sign-on failed", "<p>" + HtmlEscape(why) + "</p>");
    };
    auto state = q.QueryParam("state");
    auto code = q.QueryParam("code");
    if (!state) return fail("The provider's answer lacks a state.");
    int64_t now = clock_->UnixMicros() / 1'000'000;
    auto rows = c.Exec(
        "DELETE FROM auth_challenges WHERE challenge_hash = $1 AND kind = 'sso' AND expires_at > $2 "
        "RETURNING payload",
        db::Params(HashHex(*state), now));
    if (!rows.ok()) return Page(503, "Unavailable", "<p>Retry later.</p>");
    if (rows->empty()) return fail("This sign-on expired or was already used.");
    // The state is used up from here on, whatever the answer (RFC 6749 section 4.1.2.1 errors too).
    if (auto error = q.QueryParam("error")) {
      log::Info("auth", "the sign-on provider answered an error", {{"error", error->substr(0, 64)}});
      return fail("The sign-on provider did not sign you in.");
    }
    if (!code) return fail("The provider's answer lacks a code.");
    json payload = json::parse(rows->Text(0, 0), nullptr, false);
    std::map<std::string, std::string, std::less<>> m;
    if (payload.is_object()) {
      for (auto& [k, v] : payload.items()) {
        if (v.is_string()) m[k] = v.get<std::string>();
      }
    }
    AuthorizeParams p = AuthorizeParams::From(m);
    net::Response out;
    auto client = CheckAuthorize(c, p, &out);
    if (!client) return out;
    auto provider = GetSsoProvider(c, *storage_key_, m["org"]);
    if (!provider.ok() || !*provider || client->org != m["org"])
      return fail("This organisation has no sign-on provider.");
    // RFC 9207 (mix-up defence): an answer that names its issuer must name this provider.
    if (auto iss = q.QueryParam("iss"); iss && *iss != (*provider)->issuer) {
      log::Warn("auth", "sign-on answer from another issuer", {{"org", client->org}});
      return fail("The answer came from another provider.");
    }
    auto meta = Discover((*provider)->issuer);
    if (!meta.ok()) return Page(502, "Provider unavailable", "<p>The sign-on provider is unavailable.</p>");
    net::ClientRequest token_request;
    token_request.method = net::Method::kPost;
    token_request.url = meta->token_endpoint;
    token_request.headers.Set("Content-Type", "application/x-www-form-urlencoded");
    token_request.headers.Set("Authorization",
                              "Basic " + crypto::Base64Encode(FormEncode((*provider)->client_id) + ":" +
                                                              FormEncode((*provider)->client_secret)));
    token_request.body = "grant_type=authorization_code&code=" + FormEncode(*code) +
                         "&redirect_uri=" + FormEncode(SsoRedirect()) +
                         "&code_verifier=" + FormEncode(m["sso_verifier"]);
    auto tokens_response = http_->Send(std::move(token_request));
    if (!tokens_response.ok())
      return Page(502, "Provider unavailable", "<p>The sign-on provider is unavailable.</p>");
    json t = json::parse(tokens_response->body, nullptr, false);
    if (tokens_response->status != 200 || !t.is_object() || !t.contains("id_token"))
      return fail("The provider refused the code.");
    auto jwks = http_->Get(meta->jwks_uri);
    if (!jwks.ok() || jwks->status != 200)
      return Page(502, "Provider unavailable", "<p>The provider's keys are unavailable.</p>");
    auto id = VerifyOutsideIdToken(t.value("id_token", ""), jwks->body, (*provider)->issuer,
                                   (*provider)->client_id, m["sso_nonce"], now);
    if (!id.ok()) {
      log::Warn("auth", "outside ID token refused",
                {{"org", client->org}, {"reason", id.status().message()}});
      return fail("The provider's answer did not check out.");
    }
    OutsideEmail email;
    if (!meta->userinfo_endpoint.empty() && t.contains("access_token")) {
      net::ClientRequest info;
      info.url = meta->userinfo_endpoint;
      info.headers.Set("Authorization", "Bearer " + t.value("access_token", ""));
      auto r = http_->Send(std::move(info));
      if (r.ok() && r->status == 200) {
        json u = json::parse(r->body, nullptr, false);
        if (u.is_object() && u.value("sub", "") == id->sub) {
          email.address = u.value("email", "");
          // OIDC Core 5.1: a boolean. Some providers send the string "true"; anything else is "no".
          auto v = u.find("email_verified");
          email.verified = v != u.end() && ((v->is_boolean() && v->get<bool>()) ||
                                            (v->is_string() && v->get<std::string>() == "true"));
        }
      }
    }
    auto user = MatchOrCreateSsoUser(c, client->org, (*provider)->issuer, id->sub, email,
                                     (*provider)->require_email_verified);
    if (!user.ok())
      return fail(user.status().code() == Code::kUnavailable ? "Retry later." : user.status().message());
    if (user->disabled) return fail("This account is disabled.");
    return FinishSignIn(c, *client, p, user->user_id, now);
  }

  // The signed-in user's own second factor: Bearer access token of the user (aud default), signed with
  // the published ring only (person sessions are; see Provider::SessionIssuer): the internal ring file
  // is handed to other services, and its holder must not be able to enrol factors for anyone.
  Result<User> Me(db::Connection& c, const net::Request& q) {
    std::string_view bearer = BearerOf(q);
    if (bearer.empty()) return Unauthenticated("an access token is required");
    auto claims = checker_->Check(bearer, provider_options_.default_audience);
    if (!claims.ok()) return Unauthenticated("invalid access token");
    // Enrolling a factor is the person's own act: a delegated token (an agent acting for them) may not.
    if (!(*claims)->actors.empty())
      return PermissionDenied("a delegated token cannot change sign-in factors");
    claims = published_checker_->Check(bearer, provider_options_.default_audience);
    if (!claims.ok()) return Unauthenticated("the account API takes a sign-in session's token only");
    auto user = FindUserBySubject(c, (*claims)->sub);
    if (!user.ok()) return user.status();
    if (!*user || (*user)->disabled) return Unauthenticated("the token is not a user's");
    return **user;
  }

  // ---- the signed-in user's own account page (browser session, not a token) ----

  // The user of the request's session cookie; kUnauthenticated without a live session.
  Result<User> SessionUser(db::Connection& c, const net::Request& q) {
    auto cookie = CookieOf(q, kSessionCookie);
    if (!cookie) return Unauthenticated("not signed in");
    auto rows = c.ExecPrepared(
        "SELECT s.user_id FROM auth_sessions s JOIN auth_users u USING (user_id) "
        "WHERE s.session_hash = $1 AND s.expires_at > $2 AND NOT u.disabled",
        db::Params(HashHex(*cookie), clock_->UnixMicros() / 1'000'000));
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return Unauthenticated("not signed in");
    return GetUser(c, rows->Text(0, 0));
  }

  // The account page's token, bound to the session: HMAC-SHA256 keyed with the session cookie's
  // secret (256 random bits, HttpOnly) over a fixed label. Another site can make the browser send the
  // cookie but read neither it nor the page, so it cannot compute the token; a token is worth nothing
  // with another session (unlike a double-submit cookie, which a sibling subdomain can plant), and it
  // ends with the session. Every replica derives the same token; nothing is stored.
  static std::optional<std::string> AccountCsrfOf(const net::Request& q) {
    auto cookie = CookieOf(q, kSessionCookie);
    if (!cookie || cookie->empty()) return std::nullopt;
    auto mac = crypto::HmacSha256(crypto::AsBytes(*cookie), crypto::AsBytes("govern account page csrf v1"));
    if (!mac.ok()) return std::nullopt;
    return "gvx_" + crypto::Base64UrlEncode(std::span<const uint8_t>(*mac));
  }

  // The account POSTs: same origin by Fetch Metadata (Sec-Fetch-Site) and Origin when the browser
  // sends them, and the page's token in the form (`csrf`) or the X-CSRF-Token header.
  bool AccountCsrfOk(const net::Request& q, std::string_view presented) const {
    if (auto site = q.headers.Get("Sec-Fetch-Site"); site && *site != "same-origin" && *site != "none")
      return false;
    if (auto origin = q.headers.Get("Origin"); origin && *origin != OriginOf(provider_options_.issuer))
      return false;
    auto expected = AccountCsrfOf(q);
    return expected && !presented.empty() && crypto::ConstantTimeEquals(*expected, presented);
  }

  static net::Response NotSignedInPage() {
    return Page(401, "Not signed in",
                "<p id=\"error\" role=\"alert\">You are not signed in. Sign in through an application, then "
                "open this page again.</p>\n");
  }

  static std::string Ago(int64_t at) {
    if (at <= 0) return "-";
    time_t t = static_cast<time_t>(at);
    struct tm tm {};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
    return buf;
  }

  net::Response AccountPage(db::Connection& c, net::Request& q, std::string_view message = {}) {
    auto me = SessionUser(c, q);
    if (!me.ok())
      return me.status().code() == Code::kUnauthenticated ? NotSignedInPage()
                                                          : Page(503, "Unavailable", "<p>Retry later.</p>");
    auto factors = ListFactors(c, me->user_id);
    if (!factors.ok()) return Page(503, "Unavailable", "<p>Retry later.</p>");
    auto csrf = AccountCsrfOf(q);
    if (!csrf) return NotSignedInPage();
    std::string token = HtmlEscape(*csrf);
    std::string body;
    if (!message.empty()) body += "<p id=\"notice\" role=\"status\">" + HtmlEscape(message) + "</p>\n";
    body += "<p>Signed in as <strong id=\"email\">" + HtmlEscape(me->email) + "</strong>.</p>\n";
    body += "<h2>Ways to sign in</h2>\n<ul id=\"factors\">\n";
    for (const Factor& f : *factors) {
      std::string what, kind(FactorKindName(f.kind));
      switch (f.kind) {
        case FactorKind::kPassword:
          what = "Password";
          break;
        case FactorKind::kTotp:
          what = f.confirmed ? "Authenticator app codes" : "Authenticator app (not confirmed)";
          break;
        case FactorKind::kPasskey:
          what = "Passkey added " + Ago(f.created_at) + ", last used " +
                 (f.last_used_at ? Ago(*f.last_used_at) : "never");
          break;
        case FactorKind::kSso:
          what = "Single sign-on: " + f.id.substr(0, f.id.find('|'));
          break;
      }
      body += "<li class=\"factor\" data-kind=\"" + kind + "\" data-id=\"" + HtmlEscape(f.id) + "\">" +
              HtmlEscape(what);
      if (f.kind != FactorKind::kSso) {
        body +=
            " <form method=\"post\" action=\"/oauth/account/remove\"><input type=\"hidden\" name=\"csrf\" "
            "value=\"" +
            token + "\"><input type=\"hidden\" name=\"kind\" value=\"" + kind +
            "\"><input type=\"hidden\" name=\"id\" value=\"" + HtmlEscape(f.id) +
            "\"><button type=\"submit\">Remove</button></form>";
      }
      body += "</li>\n";
    }
    body += "</ul>\n<p><button type=\"button\" id=\"add-passkey\" data-csrf=\"" + token +
            "\" hidden>Add a passkey</button></p>\n<p id=\"passkey-status\" role=\"alert\" hidden></p>\n"
            "<p>Removing a way to sign in ends every session of yours (here and in applications).</p>\n"
            "<form method=\"post\" action=\"/oauth/account/signout\"><input type=\"hidden\" name=\"csrf\" "
            "value=\"" +
            token + "\"><button type=\"submit\" id=\"signout\">Sign out</button></form>\n";
    // The page holds the token and the person's factors: no cache may keep it.
    return NoStore(Page(200, "Your account", body, {}, "/oauth/account.js"));
  }

  net::Response AccountRemove(db::Connection& c, net::Request& q) {
    auto form = Form::Parse(q.body);
    if (!form.ok()) return Page(400, "Bad request", "<p>" + HtmlEscape(form.status().message()) + "</p>");
    if (!AccountCsrfOk(q, form->GetOr("csrf")))
      return Page(403, "Page expired", "<p>This page expired. Open your account page again.</p>");
    auto me = SessionUser(c, q);
    if (!me.ok()) return NotSignedInPage();
    auto kind = ParseRemovableFactorKind(form->GetOr("kind"));
    if (!kind.ok()) return Page(400, "Bad request", "<p>Unknown kind of factor.</p>");
    RemoveFactorRequest request{
        .user_id = me->user_id,
        .kind = *kind,
        .passkey_id = *kind == FactorKind::kPasskey ? form->GetOr("id") : std::string(),
        .force = false,  // a user never removes their own last way in
        .actor = "user:" + me->subject,
        .reason = "removed by the user on the account page"};
    int64_t now = clock_->UnixMicros() / 1'000'000;
    auto removed = RemoveFactor(c, request, now, now + provider_options_.access_lifetime.count() + 60);
    if (!removed.ok()) {
      if (removed.status().code() == Code::kFailedPrecondition)
        return Page(
            409, "Not removed",
            "<p id=\"error\" role=\"alert\">This is your last way to sign in: add another one first.</p>"
            "<p><a href=\"/oauth/account\">Back to your account</a></p>\n");
      if (removed.status().code() == Code::kNotFound || removed.status().code() == Code::kInvalidArgument)
        return Page(404, "Not found", "<p id=\"error\" role=\"alert\">No such way to sign in.</p>");
      return Page(503, "Unavailable", "<p>Retry later.</p>");
    }
    if (removed->refresh_families_revoked > 0) (void)ReloadRevocations(c);
    log::Info("auth", "factor removed by its user",
              {{"user", me->user_id}, {"factor", std::string(FactorKindName(*kind))}});
    net::Response page =
        Page(200, "Removed",
             "<p id=\"notice\" role=\"status\">Removed. Every session of yours ended: sign in "
             "again through an application.</p>\n");
    page.headers.Add("Set-Cookie", std::string(kSessionCookie) +
                                       "=; Path=/oauth; Max-Age=0; HttpOnly; SameSite=Lax" +
                                       (secure_cookie_ ? "; Secure" : ""));
    return page;
  }

  net::Response AccountSignOut(db::Connection& c, net::Request& q) {
    auto form = Form::Parse(q.body);
    if (!form.ok() || !AccountCsrfOk(q, form->GetOr("csrf")))
      return Page(403, "Page expired", "<p>This page expired. Open your account page again.</p>");
    if (auto cookie = CookieOf(q, kSessionCookie)) {
      if (!c.Exec("DELETE FROM auth_sessions WHERE session_hash = $1", db::Params(HashHex(*cookie))).ok())
        return Page(503, "Unavailable", "<p>Retry later.</p>");
    }
    net::Response page =
        Page(200, "Signed out", "<p id=\"notice\" role=\"status\">You are signed out.</p>\n");
    page.headers.Add("Set-Cookie", std::string(kSessionCookie) +
                                       "=; Path=/oauth; Max-Age=0; HttpOnly; SameSite=Lax" +
                                       (secure_cookie_ ? "; Secure" : ""));
    return page;
  }

  // The account page's JSON calls: session cookie plus the page's token in X-CSRF-Token.
  Result<User> AccountCaller(db::Connection& c, const net::Request& q) {
    if (!AccountCsrfOk(q, q.headers.Get("X-CSRF-Token").value_or("")))
      return PermissionDenied("the account page's token is missing or stale; reload the page");
    return SessionUser(c, q);
  }

  void AddAccountRoutes(net::Router& router) {
    const net::RouteOptions page{
        .cls = net::RequestClass::kInteractive, .max_body_bytes = 64 * 1024, .name = "auth_account"};
    router.Add(
        net::Method::kGet, "/oauth/account",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r),
              [this](db::Connection& c, net::Request& q) { return AccountPage(c, q); });
        },
        page);
    router.Add(
        net::Method::kPost, "/oauth/account/remove",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r),
              [this](db::Connection& c, net::Request& q) { return AccountRemove(c, q); });
        },
        page);
    router.Add(
        net::Method::kPost, "/oauth/account/signout",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r),
              [this](db::Connection& c, net::Request& q) { return AccountSignOut(c, q); });
        },
        page);
    router.AddSync(
        net::Method::kGet, "/oauth/account.js",
        [](net::Request&) {
          net::Response r(200, std::string(kAccountScript), "text/javascript; charset=utf-8");
          r.headers.Set("Cache-Control", "max-age=300");
          r.headers.Set("X-Content-Type-Options", "nosniff");
          return r;
        },
        page);
    AddPasskeyRegistrationRoutes(router, "/oauth/account/passkeys", &AuthService::AccountCaller,
                                 /*log_added=*/true, page);
  }

  // POST <base>/options and POST <base>: passkey registration for the user `caller` resolves (the
  // account page's session, or a bearer token on /v1/auth/me).
  using Caller = Result<User> (AuthService::*)(db::Connection&, const net::Request&);
  void AddPasskeyRegistrationRoutes(net::Router& router, const std::string& base, Caller caller,
                                    bool log_added, const net::RouteOptions& route) {
    router.Add(
        net::Method::kPost, base + "/options",
        [this, caller](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r), [this, caller](db::Connection& c, net::Request& q) {
            auto me = (this->*caller)(c, q);
            if (!me.ok()) return StatusProblem(me.status(), q);
            auto options = BeginPasskeyRegistration(c, rp_, "Govern", *me, clock_->UnixMicros() / 1'000'000);
            if (!options.ok()) return StatusProblem(options.status(), q);
            return NoStore(net::JsonResponse(*options));
          });
        },
        route);
    router.Add(
        net::Method::kPost, base,
        [this, caller, log_added](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r), [this, caller, log_added](db::Connection& c, net::Request& q) {
            auto me = (this->*caller)(c, q);
            if (!me.ok()) return StatusProblem(me.status(), q);
            auto response = webauthn::ParseRegistrationResponseJson(q.body);
            if (!response.ok())
              return Problem(400, "the body is not a registration response: " + response.status().message(),
                             q);
            Status s = FinishPasskeyRegistration(c, rp_, *me, *response, clock_->UnixMicros() / 1'000'000);
            if (s.code() == Code::kAlreadyExists || s.code() == Code::kUnavailable)
              return StatusProblem(s, q);
            if (!s.ok()) return Problem(400, "passkey refused: " + s.message(), q);
            if (log_added) log::Info("auth", "passkey added by its user", {{"user", me->user_id}});
            return net::Response(201, "");
          });
        },
        route);
  }

  void AddSelfRoutes(net::Router& router) {
    AddAccountRoutes(router);
    const net::RouteOptions pk{
        .cls = net::RequestClass::kInteractive, .max_body_bytes = 64 * 1024, .name = "auth_passkey_register"};
    AddPasskeyRegistrationRoutes(router, "/v1/auth/me/passkeys", &AuthService::Me, /*log_added=*/false, pk);
    const net::RouteOptions o{
        .cls = net::RequestClass::kInteractive, .max_body_bytes = 4096, .name = "auth_totp"};
    router.Add(
        net::Method::kPost, "/v1/auth/me/totp",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r), [this](db::Connection& c, net::Request& q) {
            auto me = Me(c, q);
            if (!me.ok()) return StatusProblem(me.status(), q);
            auto e = BeginTotp(c, *storage_key_, me->user_id, "Govern", me->email);
            if (!e.ok()) return StatusProblem(e.status(), q);
            return NoStore(net::JsonResponse(
                json{{"secret", e->secret_base32}, {"otpauth_uri", e->otpauth_uri}}.dump(), 201));
          });
        },
        o);
    router.Add(
        net::Method::kPost, "/v1/auth/me/totp/confirm",
        [this](net::Request&& req, net::Responder r) {
          Run(std::move(req), std::move(r), [this](db::Connection& c, net::Request& q) {
            auto me = Me(c, q);
            if (!me.ok()) return StatusProblem(me.status(), q);
            json in = json::parse(q.body, nullptr, false);
            if (!in.is_object() || !in.contains("code") || !in["code"].is_string())
              return Problem(400, "the body must be {\"code\": \"123456\"}", q);
            Status s = ConfirmTotp(c, *storage_key_, me->user_id, in["code"].get<std::string>(),
                                   clock_->UnixMicros() / 1'000'000);
            if (!s.ok()) return StatusProblem(s, q);
            return net::Response(204, "");
          });
        },
        o);
  }

  // ---- admin API ----
  // Who may administer: a `govern auth admin-token` token (every organisation), or an access token
  // with scope auth:admin signed with the published ring (its own organisation only). Returns the
  // organisation limit ("" = all).
  Result<std::string> Admin(db::Connection& c, const net::Request& q) {
    std::string_view bearer = BearerOf(q);
    if (bearer.empty()) return Unauthenticated("an admin token is required (Authorization: Bearer ...)");
    if (bearer.starts_with("gva_")) {
      GOVERN_RETURN_IF_ERROR(CheckAdminToken(c, bearer));
      return std::string();
    }
    // Only the published ring: any holder of the internal ring file (other services) can mint HS256
    // tokens with any scope; tokens with auth:admin are always issued on the published ring.
    auto claims = published_checker_->Check(bearer, provider_options_.default_audience);
    if (!claims.ok()) return Unauthenticated("invalid admin token");
    if (!(*claims)->HasScope(kAdminScope)) return PermissionDenied("the token lacks scope auth:admin");
    if ((*claims)->org.empty()) return PermissionDenied("the token names no organisation");
    return (*claims)->org;
  }

  // Who an admin request acts as, for the record: "admin-token:<name>" or "user:<sub>".
  std::string ActorOf(db::Connection& c, const net::Request& q) {
    std::string_view bearer = BearerOf(q);
    if (bearer.starts_with("gva_")) {
      auto rows = c.ExecPrepared("SELECT name FROM auth_admin_tokens WHERE token_hash = $1",
                                 db::Params(HashHex(bearer)));
      return "admin-token:" + std::string(rows.ok() && !rows->empty() ? rows->Text(0, 0) : "");
    }
    auto claims = checker_->Check(bearer, provider_options_.default_audience);
    return claims.ok() ? "user:" + (*claims)->sub : "unknown";
  }

  static json FactorJson(const Factor& f) {
    json j = {{"kind", FactorKindName(f.kind)}};
    if (!f.id.empty()) j["id"] = f.id;
    if (f.kind == FactorKind::kTotp) j["confirmed"] = f.confirmed;
    if (f.kind == FactorKind::kPasskey) {
      j["algorithm"] = f.algorithm;
      j["created_at"] = f.created_at;
      j["last_used_at"] = f.last_used_at ? json(*f.last_used_at) : json(nullptr);
    }
    return j;
  }

  // DELETE .../factors/{kind}[/{id}]?force=true&reason=...
  net::Response RemoveFactorRoute(db::Connection& c, net::Request& q, std::string_view kind_name,
                                  std::string_view passkey_id) {
    auto user = GetUser(c, q.Param("user_id"));
    if (!user.ok() || user->org != q.Param("org"))
      return Problem(404, "no such user in this organisation", q);
    auto kind = ParseRemovableFactorKind(kind_name);
    if (!kind.ok()) return StatusProblem(kind.status(), q);
    if ((*kind == FactorKind::kPasskey) != !passkey_id.empty())
      return Problem(404, "a passkey is named by its id: .../factors/passkey/{id}", q);
    auto force = q.QueryParam("force");
    RemoveFactorRequest request{.user_id = user->user_id,
                                .kind = *kind,
                                .passkey_id = std::string(passkey_id),
                                .force = force && (*force == "true" || *force == "1"),
                                .actor = ActorOf(c, q),
                                .reason = q.QueryParam("reason").value_or("")};
    int64_t now = clock_->UnixMicros() / 1'000'000;
    // A revoked family's sid must outlive every access token of it.
    auto removed = RemoveFactor(c, request, now, now + provider_options_.access_lifetime.count() + 60);
    if (!removed.ok()) return StatusProblem(removed.status(), q);
    if (removed->refresh_families_revoked > 0) (void)ReloadRevocations(c);
    return NoStore(net::JsonResponse(json{
        {"user_id", user->user_id},
        {"removed", FactorKindName(*kind)},
        {"id", std::string(passkey_id)},
        {"forced", removed->was_last},
        {"sessions_ended", removed->sessions_ended},
        {"refresh_families_revoked", removed->refresh_families_revoked},
        {"event", removed->event}}.dump()));
  }

  using AdminBody = std::function<net::Response(db::Connection&, net::Request&, const json&)>;

  void AddAdmin(net::Router& router, net::Method m, std::string pattern, bool global_only, AdminBody body) {
    std::string name = "auth_admin";
    router.Add(m, pattern,
               [this, global_only, body = std::move(body)](net::Request&& req, net::Responder r) {
                 Run(std::move(req), std::move(r),
                     [this, global_only, body](db::Connection& c, net::Request& q) {
                       auto scope = Admin(c, q);
                       if (!scope.ok()) return StatusProblem(scope.status(), q);
                       if (!scope->empty() && (global_only || q.Param("org") != *scope))
                         return Problem(403, "this token administers organisation " + *scope + " only", q);
                       json in = json::object();
                       if (!q.body.empty()) {
                         in = json::parse(q.body, nullptr, false);
                         if (in.is_discarded() || !in.is_object())
                           return Problem(400, "the body must be a JSON object", q);
                       }
                       try {
                         return body(c, q, in);
                       } catch (const json::exception&) {
                         return Problem(400, "a field has the wrong type", q);
                       }
                     });
               },
               {.cls = net::RequestClass::kNormal, .max_body_bytes = 64 * 1024, .name = name});
  }

  static json UserJson(const User& u) {
    return {{"user_id", u.user_id},
            {"org", u.org},
            {"email", u.email},
            {"subject", u.subject},
            {"display_name", u.display_name},
            {"disabled", u.disabled},
            {"has_password", !u.password_hash.empty()}};
  }
  static json ClientJson(const Client& cl) {
    return {{"client_id", cl.client_id},
            {"org", cl.org},
            {"name", cl.name},
            {"kind", cl.kind == ClientKind::kAgent ? "agent" : "app"},
            {"confidential", cl.confidential},
            {"scopes", cl.scopes},
            {"redirect_uris", cl.redirect_uris},
            {"disabled", cl.disabled}};
  }

  void AddAdminRoutes(net::Router& router) {
    AddAdmin(router, net::Method::kPost, "/v1/auth/orgs", true,
             [](db::Connection& c, net::Request& q, const json& in) {
               Status s = CreateOrg(c, in.value("org", ""), in.value("name", ""));
               if (!s.ok()) return StatusProblem(s, q);
               return net::JsonResponse(
                   json{{"org", in.value("org", "")}, {"name", in.value("name", "")}}.dump(), 201);
             });
    AddAdmin(router, net::Method::kGet, "/v1/auth/orgs", true,
             [](db::Connection& c, net::Request& q, const json&) {
               auto orgs = ListOrgs(c);
               if (!orgs.ok()) return StatusProblem(orgs.status(), q);
               json out = json::array();
               for (const auto& o : *orgs) out.push_back({{"org", o.org}, {"name", o.name}});
               return net::JsonResponse(json{{"orgs", out}}.dump());
             });
    AddAdmin(router, net::Method::kPost, "/v1/auth/orgs/{org}/users", false,
             [this](db::Connection& c, net::Request& q, const json& in) {
               std::string hash;
               std::string password = in.value("password", "");
               if (!password.empty()) {
                 if (password.size() < 8 || password.size() > 1024)
                   return Problem(400, "password must be 8-1024 bytes", q);
                 auto h = crypto::HashPassword(password, password_.argon2);
                 if (!h.ok()) return StatusProblem(h.status(), q);
                 hash = *h;
               }
               auto u =
                   CreateUser(c, q.Param("org"), in.value("email", ""), in.value("display_name", ""), hash);
               if (!u.ok()) return StatusProblem(u.status(), q);
               return net::JsonResponse(UserJson(*u).dump(), 201);
             });
    AddAdmin(router, net::Method::kGet, "/v1/auth/orgs/{org}/users", false,
             [](db::Connection& c, net::Request& q, const json&) {
               auto users = ListUsers(c, q.Param("org"));
               if (!users.ok()) return StatusProblem(users.status(), q);
               json out = json::array();
               for (const auto& u : *users) out.push_back(UserJson(u));
               return net::JsonResponse(json{{"users", out}}.dump());
             });
    AddAdmin(router, net::Method::kPost, "/v1/auth/orgs/{org}/users/{user_id}/disable", false,
             [](db::Connection& c, net::Request& q, const json& in) {
               auto u = GetUser(c, q.Param("user_id"));
               if (!u.ok() || u->org != q.Param("org"))
                 return Problem(404, "no such user in this organisation", q);
               Status s = SetUserDisabled(c, q.Param("user_id"), in.value("disabled", true));
               if (!s.ok()) return StatusProblem(s, q);
               return net::JsonResponse(
                   json{{"user_id", q.Param("user_id")}, {"disabled", in.value("disabled", true)}}.dump());
             });
    AddAdmin(
        router, net::Method::kGet, "/v1/auth/orgs/{org}/users/{user_id}/factors", false,
        [](db::Connection& c, net::Request& q, const json&) {
          auto u = GetUser(c, q.Param("user_id"));
          if (!u.ok() || u->org != q.Param("org"))
            return Problem(404, "no such user in this organisation", q);
          auto factors = ListFactors(c, u->user_id);
          if (!factors.ok()) return StatusProblem(factors.status(), q);
          auto events = ListFactorEvents(c, u->user_id, 50);
          if (!events.ok()) return StatusProblem(events.status(), q);
          json fs = json::array(), es = json::array();
          for (const auto& f : *factors) fs.push_back(FactorJson(f));
          for (const auto& e : *events) {
            es.push_back({{"seq", e.seq},
                          {"at", e.at},
                          {"action", e.action},
                          {"factor", e.factor},
                          {"id", e.factor_id},
                          {"actor", e.actor},
                          {"forced", e.forced},
                          {"reason", e.reason},
                          {"sessions_ended", e.sessions_ended},
                          {"refresh_families_revoked", e.refresh_families_revoked}});
          }
          return net::JsonResponse(json{{"user_id", u->user_id}, {"factors", fs}, {"events", es}}.dump());
        });
    AddAdmin(router, net::Method::kDelete, "/v1/auth/orgs/{org}/users/{user_id}/factors/{kind}", false,
             [this](db::Connection& c, net::Request& q, const json&) {
               return RemoveFactorRoute(c, q, q.Param("kind"), "");
             });
    AddAdmin(router, net::Method::kDelete, "/v1/auth/orgs/{org}/users/{user_id}/factors/{kind}/{id}", false,
             [this](db::Connection& c, net::Request& q, const json&) {
               return RemoveFactorRoute(c, q, q.Param("kind"), q.Param("id"));
             });
    AddAdmin(
        router, net::Method::kPost, "/v1/auth/orgs/{org}/groups", false,
        [](db::Connection& c, net::Request& q, const json& in) {
          Status s = CreateGroup(c, q.Param("org"), in.value("name", ""));
          if (!s.ok()) return StatusProblem(s, q);
          return net::JsonResponse(json{{"org", q.Param("org")}, {"name", in.value("name", "")}}.dump(), 201);
        });
    AddAdmin(router, net::Method::kGet, "/v1/auth/orgs/{org}/groups", false,
             [](db::Connection& c, net::Request& q, const json&) {
               auto groups = ListGroups(c, q.Param("org"));
               if (!groups.ok()) return StatusProblem(groups.status(), q);
               return net::JsonResponse(json{{"groups", *groups}}.dump());
             });
    AddAdmin(router, net::Method::kPut, "/v1/auth/orgs/{org}/groups/{group}/members/{user_id}", false,
             [](db::Connection& c, net::Request& q, const json&) {
               Status s = AddMember(c, q.Param("org"), q.Param("group"), q.Param("user_id"));
               if (!s.ok()) return StatusProblem(s, q);
               return net::Response(204, "");
             });
    AddAdmin(router, net::Method::kDelete, "/v1/auth/orgs/{org}/groups/{group}/members/{user_id}", false,
             [](db::Connection& c, net::Request& q, const json&) {
               Status s = RemoveMember(c, q.Param("org"), q.Param("group"), q.Param("user_id"));
               if (!s.ok()) return StatusProblem(s, q);
               return net::Response(204, "");
             });
    AddAdmin(router, net::Method::kPost, "/v1/auth/orgs/{org}/clients", false,
             [](db::Connection& c, net::Request& q, const json& in) {
               std::string kind = in.value("kind", "agent");
               if (kind != "agent" && kind != "app") return Problem(400, "kind must be 'agent' or 'app'", q);
               bool confidential = in.value("confidential", kind == "agent");
               auto made = CreateClient(c, q.Param("org"), in.value("name", ""),
                                        kind == "agent" ? ClientKind::kAgent : ClientKind::kApp, confidential,
                                        in.value("scopes", std::vector<std::string>{}),
                                        in.value("redirect_uris", std::vector<std::string>{}));
               if (!made.ok()) return StatusProblem(made.status(), q);
               json out = ClientJson(made->client);
               if (!made->secret.empty()) out["client_secret"] = made->secret;
               return NoStore(net::JsonResponse(out.dump(), 201));
             });
    AddAdmin(router, net::Method::kPut, "/v1/auth/orgs/{org}/sso", false,
             [this](db::Connection& c, net::Request& q, const json& in) {
               SsoProvider p{std::string(q.Param("org")), in.value("issuer", ""), in.value("client_id", ""),
                             in.value("client_secret", "")};
               if (auto v = in.find("require_email_verified"); v != in.end()) {
                 if (!v->is_boolean()) return Problem(400, "require_email_verified must be true or false", q);
                 p.require_email_verified = v->get<bool>();
               }
               while (p.issuer.ends_with('/')) p.issuer.pop_back();
               Status s = SetSsoProvider(c, *storage_key_, p);
               if (!s.ok()) return StatusProblem(s, q);
               return net::JsonResponse(json{{"org", p.org},
                                             {"issuer", p.issuer},
                                             {"client_id", p.client_id},
                                             {"require_email_verified", p.require_email_verified}}
                                            .dump());
             });
    AddAdmin(router, net::Method::kGet, "/v1/auth/orgs/{org}/clients", false,
             [](db::Connection& c, net::Request& q, const json&) {
               auto clients = ListClients(c, q.Param("org"));
               if (!clients.ok()) return StatusProblem(clients.status(), q);
               json out = json::array();
               for (const auto& cl : *clients) out.push_back(ClientJson(cl));
               return net::JsonResponse(json{{"clients", out}}.dump());
             });
  }

  db::Pool* pool_ = nullptr;
  const Clock* clock_ = nullptr;
  tokens::RotationPolicy rotation_;
  tokens::Alg id_alg_ = tokens::Alg::kRS256;
  // auth.access_token_signing: HS256 internal ring for the default audience (else the published ring).
  // The checker trusts both rings either way, so tokens issued before a switch stay valid.
  bool internal_access_ = false;
  std::optional<crypto::Aes256GcmKey> storage_key_;
  PasswordPolicy password_;
  std::vector<Cidr> trusted_proxies_;  // auth.trusted_proxies
  int v4_prefix_ = 32, v6_prefix_ = 64;
  std::unique_ptr<AddressLimiter> signin_limiter_;  // failed password, TOTP and passkey sign-ins
  std::unique_ptr<AddressLimiter> token_limiter_;   // failed client authentications at /oauth/token
  bool secure_cookie_ = false;
  int64_t session_lifetime_s_ = 0;
  ProviderOptions provider_options_;
  std::unique_ptr<tokens::Issuer> issuer_;
  std::unique_ptr<tokens::Issuer> external_;  // access tokens for outside audiences, asymmetric ring
  std::unique_ptr<tokens::Checker> checker_;
  std::unique_ptr<tokens::Checker> published_checker_;  // the published ring only: admin and account APIs
  std::string ring_file_;                               // auth.internal_ring_file (resolved)
  crypto::SecretBytes ring_written_;                    // what it holds, to rewrite only on change
  std::unique_ptr<Provider> provider_;
  std::atomic<std::shared_ptr<const std::string>> jwks_;
  std::string discovery_;
  webauthn::RelyingParty rp_;
  std::unique_ptr<net::HttpClient> http_;  // calls to outside OIDC providers (single sign-on)
  std::atomic<bool> ready_{false};         // set once Start has everything a handler reads
  std::unique_ptr<services::JobQueue> workers_;
  std::unique_ptr<net::Server> server_;
  std::string host_;
  std::chrono::milliseconds check_every_{60000};
  std::mutex tick_mu_;
  std::condition_variable tick_cv_;
  bool stopping_ = false;
  std::thread ticker_;
};

}  // namespace

std::unique_ptr<services::Service> NewAuthService() { return std::make_unique<AuthService>(); }

}  // namespace govern::auth_service
