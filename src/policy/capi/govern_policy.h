/* govern_policy.h: the C ABI of Govern's Cedar policy engine, for agents written in any language that
 * can call C (Python ctypes, Node ffi, Go cgo, Rust, ...). Shared library: libgovern_policy.so.
 *
 * An engine decides requests (principal, action, resource, context) against a Cedar policy set, an
 * entity store and optional rate limits and budgets (docs/policy-extensions.md: a permit marked
 * @require_approval makes the decision approval_required; a limit with no room left turns an allow or
 * approval into deny), loaded from text or from a signed bundle (docs/bundles.md) verified against trusted
 * public keys. A bundle engine takes newer bundles atomically while decisions continue; a refused
 * bundle leaves the old one serving. An engine may record every decision to a local decision log
 * (docs/policy-decisions.md). docs/policy-embedding.md shows how to embed it.
 *
 * Conventions
 *  - Handles are opaque. Every object made by a *_new / *_from_* function is freed by its *_free
 *    function (NULL is accepted and ignored). Freeing twice is undefined.
 *  - Functions return an int: GOVERN_POLICY_OK (0) or an error code below. Where a function takes
 *    `char** error`, it may be NULL; otherwise on failure *error receives a message (NUL-terminated,
 *    UTF-8) that the caller frees with govern_policy_string_free, and on success *error is set to NULL.
 *    Decision errors are kept in the result object instead (no allocation on the hot path).
 *  - No C++ exception crosses this boundary; an unexpected one becomes GOVERN_POLICY_ERR_INTERNAL.
 *  - Strings passed in are NUL-terminated UTF-8 and are copied when kept: the caller may free them as
 *    soon as the call returns.
 *
 * Threading
 *  - An engine is thread-safe: any number of threads may call govern_policy_decide on one engine at once,
 *    while another thread swaps bundles or reads stats. govern_policy_engine_free must not race with
 *    any other call on the same engine.
 *  - A result object is used by one thread at a time (give each thread its own and reuse it: a decision
 *    then allocates nothing beyond the engine's own work). It may be used with several engines.
 */
#ifndef GOVERN_POLICY_H_
#define GOVERN_POLICY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GOVERN_POLICY_API __attribute__((visibility("default")))
#else
#define GOVERN_POLICY_API
#endif

/* The ABI version this header describes. Compatible additions keep the number; a change to an existing
 * function's meaning or signature raises it. Check govern_policy_abi_version() == GOVERN_POLICY_ABI_VERSION
 * after loading the library.
 * Version 2: decisions go through the bundle's limits.json and produce APPROVAL_REQUIRED (version 1 never
 * did: a version-1 caller testing `decision != DENY` would have acted on it), and engine error messages
 * name the file ("policies.cedar: ..."). The rest is additions (since the first release of version 2:
 * govern_policy_request_ip/decimal/datetime/duration and their _scaled/_millis forms). */
#define GOVERN_POLICY_ABI_VERSION 2

/* Error codes. New codes may be added; treat unknown nonzero codes as errors. */
enum {
  GOVERN_POLICY_OK = 0,
  GOVERN_POLICY_ERR_INVALID_ARGUMENT = 1, /* a NULL where a value is required, an unknown enum value */
  GOVERN_POLICY_ERR_POLICY = 2,           /* policy text that does not parse */
  GOVERN_POLICY_ERR_ENTITIES = 3,         /* entities JSON that is not a valid Cedar entity list */
  GOVERN_POLICY_ERR_REQUEST = 4,          /* a request that cannot be decided (context not a JSON object) */
  GOVERN_POLICY_ERR_BUNDLE_REFUSED =
      5,                    /* a bundle refused: message is "<reason>: <detail>" (docs/bundles.md) */
  GOVERN_POLICY_ERR_IO = 6, /* a file could not be read or a directory not opened */
  GOVERN_POLICY_ERR_NOT_SUPPORTED = 7, /* e.g. a bundle swap on an engine made from text */
  GOVERN_POLICY_ERR_RECORD = 8,        /* the decision could not be recorded (see govern_policy_decide) */
  GOVERN_POLICY_ERR_STATE = 9,         /* the call does not fit the object's state (a second decision log) */
  GOVERN_POLICY_ERR_NO_MEMORY = 10,
  GOVERN_POLICY_ERR_INTERNAL = 11,
  GOVERN_POLICY_ERR_LIMITS = 12 /* limits JSON that is not a valid limits.json */
};

/* Decisions. APPROVAL_REQUIRED: allowed once a human approves; produced only when a satisfied permit is
 * annotated @require_approval (docs/policy-extensions.md), so a policy set without that annotation gives
 * exactly Cedar's allow/deny. Treat it as "do not act yet", never as allow. */
typedef enum {
  GOVERN_POLICY_DENY = 0,
  GOVERN_POLICY_ALLOW = 1,
  GOVERN_POLICY_APPROVAL_REQUIRED = 2
} govern_policy_decision;

typedef struct govern_policy_engine govern_policy_engine;
typedef struct govern_policy_result govern_policy_result;

/* GOVERN_POLICY_ABI_VERSION of the loaded library. Thread-safe. */
GOVERN_POLICY_API uint32_t govern_policy_abi_version(void);
/* A static string naming an error code ("invalid_argument", ...; "unknown" for others). Thread-safe. */
GOVERN_POLICY_API const char* govern_policy_error_name(int code);
/* "allow", "deny", "approval_required" (static; "unknown" for others). Thread-safe. */
GOVERN_POLICY_API const char* govern_policy_decision_name(int decision);
/* Frees a string this library returned through a `char**` out-parameter. NULL is ignored. */
GOVERN_POLICY_API void govern_policy_string_free(char* s);

/* ---- Engines ---- */

/* An engine from Cedar policy text and a Cedar JSON entity list (NULL or "" means no entities).
 * Policies get the ids "policy0", "policy1", ... in text order (as the Cedar reference names the
 * policies of one text); their annotations, such as @id("..."), are readable from results.
 * Errors: INVALID_ARGUMENT, POLICY ("policies.cedar: line:column: ..."), ENTITIES ("entities.json: ..."). */
GOVERN_POLICY_API int govern_policy_engine_from_text(const char* policies, const char* entities_json,
                                                     govern_policy_engine** out, char** error);
/* The same with rate limits and budgets: limits_json is the content of a bundle's limits.json
 * (docs/policy-extensions.md; NULL or "" means none). Counters are per engine and per process.
 * Errors: as above, and LIMITS ("limits.json: limit #2 (\"id\"): ..."). */
GOVERN_POLICY_API int govern_policy_engine_from_text_with_limits(const char* policies,
                                                                 const char* entities_json,
                                                                 const char* limits_json,
                                                                 govern_policy_engine** out, char** error);

/* An engine from a signed bundle (docs/bundles.md) of kind "policy", verified against the public key
 * files in trusted_key_files (n_keys >= 1; `govern policy keygen` writes them). The bundle holds
 * "policies.cedar" (required), "entities.json" and "limits.json" (optional), as `govern policy sign --dir
 * DIR` makes from a directory holding those files. expected_org: when not NULL, a bundle of another
 * organisation is refused (wrong_bundle). Errors: INVALID_ARGUMENT, IO (a key or bundle file unreadable),
 * BUNDLE_REFUSED (message "<reason>: <detail>"; a bundle whose policies do not parse is "rejected"). */
GOVERN_POLICY_API int govern_policy_engine_from_bundle_file(const char* const* trusted_key_files,
                                                            size_t n_keys, const char* expected_org,
                                                            const char* bundle_path,
                                                            govern_policy_engine** out, char** error);
GOVERN_POLICY_API int govern_policy_engine_from_bundle_bytes(const char* const* trusted_key_files,
                                                             size_t n_keys, const char* expected_org,
                                                             const void* bundle, size_t bundle_len,
                                                             govern_policy_engine** out, char** error);

/* Offers a new bundle to a bundle engine. It is verified with the loaded version as the minimum; on
 * success it replaces the loaded one atomically (decisions in flight finish on the old one, later ones
 * use the new one; none sees a mix). The same bundle again is OK and changes nothing. A refused bundle
 * (BUNDLE_REFUSED, message "<reason>: <detail>", e.g. "version_too_old: ...", "bad_signature: ...")
 * leaves the old bundle serving. NOT_SUPPORTED on an engine made from text. Thread-safe; swaps are
 * serialised among themselves and never block decisions. Limit counters survive a swap: a limit whose
 * id the new bundle keeps goes on with its counters (a swap refills no budget); counters of limits that
 * are gone are dropped when the table needs room. */
GOVERN_POLICY_API int govern_policy_engine_swap_bundle_bytes(govern_policy_engine* engine, const void* bundle,
                                                             size_t bundle_len, char** error);
GOVERN_POLICY_API int govern_policy_engine_swap_bundle_file(govern_policy_engine* engine,
                                                            const char* bundle_path, char** error);

/* Frees the engine (and closes its decision log, syncing what it queued). Results that decided with it
 * stay valid and keep what they borrowed alive until they are reused or freed. */
GOVERN_POLICY_API void govern_policy_engine_free(govern_policy_engine* engine);

/* ---- Recording decisions ---- */

typedef enum {
  GOVERN_POLICY_LOG_BUFFERED = 0, /* record queued; the log syncs groups every few ms (the default) */
  GOVERN_POLICY_LOG_DURABLE = 1   /* decide returns once the record is on disk (fdatasync) */
} govern_policy_log_mode;

typedef enum {
  GOVERN_POLICY_CONTEXT_HASH = 0, /* keep the SHA-256 of the context JSON (the default) */
  GOVERN_POLICY_CONTEXT_FULL = 1, /* keep the context JSON */
  GOVERN_POLICY_CONTEXT_NONE = 2  /* keep nothing of the context */
} govern_policy_context_kind;

/* Opens a decision log (a write-ahead log in `dir`, created if missing; one process at a time) and
 * records every later decision of this engine in it: time, principal, action, resource, decision,
 * determining and erroring policy ids, bundle version, organisation (`organisation`, or the bundle's when
 * NULL) and the context as `context` says. docs/policy-decisions.md says what a crash loses in each mode.
 * Once per engine (a second call: STATE). Thread-safe: decisions made while it opens may go unrecorded.
 * Errors: INVALID_ARGUMENT, IO, STATE. */
GOVERN_POLICY_API int govern_policy_engine_open_log(govern_policy_engine* engine, const char* dir, int mode,
                                                    int context, const char* organisation, char** error);
/* Waits until every decision recorded before the call is on disk. OK when no log is open. */
GOVERN_POLICY_API int govern_policy_engine_flush_log(govern_policy_engine* engine, char** error);

/* ---- Deciding ---- */

/* A reusable result; NULL when out of memory. */
GOVERN_POLICY_API govern_policy_result* govern_policy_result_new(void);
GOVERN_POLICY_API void govern_policy_result_free(govern_policy_result* result);

/* Decides one request and fills `result` (previous contents are replaced). Entity uids are given as
 * type and id ("Agent", "agent-7"; "Action", "call_tool"; "Tool", "web_search"); context_json is a JSON
 * object, or NULL / "" for {}. Thread-safe per engine (see Threading); `result` must not be in use by
 * another thread.
 * Decided as docs/policy-extensions.md says: Cedar (forbid > permit > default deny), then approval (a
 * satisfied @require_approval permit gives APPROVAL_REQUIRED), then the engine's limits: an allow or
 * approval that a limit has no room for becomes DENY with govern_policy_result_limit naming the limit;
 * allowed and approval_required decisions take their share from the limits' counters.
 * Returns OK, or: INVALID_ARGUMENT (a NULL), REQUEST (context not a JSON object, or a type name that is
 * not a Cedar name; message in the result),
 * RECORD (a decision log is open and the decision could not be recorded: the disk is full or too slow, or
 * an earlier buffered record's sync failed). On any error the result's decision is DENY: an agent must
 * not act on a decision that is not recorded. Policies that fail to evaluate are not an error: they are
 * skipped and listed (govern_policy_result_error_*), as Cedar does. */
GOVERN_POLICY_API int govern_policy_decide(govern_policy_engine* engine, govern_policy_result* result,
                                           const char* principal_type, const char* principal_id,
                                           const char* action_type, const char* action_id,
                                           const char* resource_type, const char* resource_id,
                                           const char* context_json);

/* Typed requests: the same decision without writing the context as JSON. Begin a request in the result,
 * add the context's members, then decide it:
 *
 *   govern_policy_request_begin(r, "Agent", "a1", "Action", "call_tool", "Tool", "search");
 *   govern_policy_request_long(r, "cost_cents", 3);
 *   govern_policy_request_begin_record(r, "args");
 *   govern_policy_request_string(r, "query", q);
 *   govern_policy_request_end(r);
 *   rc = govern_policy_decide_request(engine, r);   (OK, or as govern_policy_decide)
 *
 * Members go into the record or set opened last (the context record at the top); inside a set the key
 * is ignored (may be NULL). A record keeps one value per key. Strings are copied at once. Setters return
 * OK, INVALID_ARGUMENT (a NULL where a value is required) or STATE (no request begun); problems the
 * builder finds (a duplicate key, a record or set left open, a type name that is not a Cedar name)
 * come from govern_policy_decide_request as REQUEST. A begun request is decided once. The decision log
 * records the context as the equivalent JSON text. A result used this way allocates nothing per decision
 * once its storage has grown. The same thread rules as govern_policy_decide. */
GOVERN_POLICY_API int govern_policy_request_begin(govern_policy_result* result, const char* principal_type,
                                                  const char* principal_id, const char* action_type,
                                                  const char* action_id, const char* resource_type,
                                                  const char* resource_id);
GOVERN_POLICY_API int govern_policy_request_string(govern_policy_result* result, const char* key,
                                                   const char* value);
GOVERN_POLICY_API int govern_policy_request_long(govern_policy_result* result, const char* key,
                                                 int64_t value);
GOVERN_POLICY_API int govern_policy_request_bool(govern_policy_result* result, const char* key, int value);
/* An entity reference (Type::"id"), as {"__entity": {...}} in JSON. */
GOVERN_POLICY_API int govern_policy_request_entity(govern_policy_result* result, const char* key,
                                                   const char* type, const char* id);
/* Extension values without JSON (added within ABI version 2; look them up with dlsym to support older
 * libraries). From the text Cedar's constructors take: ip("10.0.0.1") or a range ip("10.0.0.0/8"),
 * decimal("12.50"), datetime("2024-10-15T11:38:02Z"), duration("1h30m"); text the constructor refuses
 * makes govern_policy_decide_request return REQUEST naming the key. The decision log records them as
 * {"__extn": {"fn": ..., "arg": ...}}. */
GOVERN_POLICY_API int govern_policy_request_ip(govern_policy_result* result, const char* key,
                                               const char* text);
GOVERN_POLICY_API int govern_policy_request_decimal(govern_policy_result* result, const char* key,
                                                    const char* text);
GOVERN_POLICY_API int govern_policy_request_datetime(govern_policy_result* result, const char* key,
                                                     const char* text);
GOVERN_POLICY_API int govern_policy_request_duration(govern_policy_result* result, const char* key,
                                                     const char* text);
/* The same from numbers: a decimal in ten-thousandths (12.5 is 125000), a datetime in milliseconds since
 * the Unix epoch, a duration in milliseconds. */
GOVERN_POLICY_API int govern_policy_request_decimal_scaled(govern_policy_result* result, const char* key,
                                                           int64_t ten_thousandths);
GOVERN_POLICY_API int govern_policy_request_datetime_millis(govern_policy_result* result, const char* key,
                                                            int64_t millis_since_epoch);
GOVERN_POLICY_API int govern_policy_request_duration_millis(govern_policy_result* result, const char* key,
                                                            int64_t millis);
GOVERN_POLICY_API int govern_policy_request_begin_record(govern_policy_result* result, const char* key);
GOVERN_POLICY_API int govern_policy_request_begin_set(govern_policy_result* result, const char* key);
/* Closes the record or set opened last. */
GOVERN_POLICY_API int govern_policy_request_end(govern_policy_result* result);
/* Decides the begun request into the same result; returns as govern_policy_decide (and STATE when no
 * request is begun). */
GOVERN_POLICY_API int govern_policy_decide_request(govern_policy_engine* engine,
                                                   govern_policy_result* result);

/* Result accessors. Returned strings are borrowed: valid until the result is next passed to
 * govern_policy_decide or freed. Out-of-range indices give NULL. */
GOVERN_POLICY_API int govern_policy_result_decision(const govern_policy_result* result);
/* The policies that determined the decision, by id, in policy order: the satisfied forbids if any; else
 * the satisfied @require_approval permits if any (APPROVAL_REQUIRED); else the satisfied permits. None
 * when a limit denied (see govern_policy_result_limit). */
GOVERN_POLICY_API size_t govern_policy_result_reason_count(const govern_policy_result* result);
GOVERN_POLICY_API const char* govern_policy_result_reason(const govern_policy_result* result, size_t i);
/* The value of annotation `key` (e.g. "id" for @id("...")) on the i-th determining policy; NULL if none. */
GOVERN_POLICY_API const char* govern_policy_result_reason_annotation(const govern_policy_result* result,
                                                                     size_t i, const char* key);
/* The policies skipped because their evaluation failed, with the reason. */
GOVERN_POLICY_API size_t govern_policy_result_error_count(const govern_policy_result* result);
GOVERN_POLICY_API const char* govern_policy_result_error_policy(const govern_policy_result* result, size_t i);
GOVERN_POLICY_API const char* govern_policy_result_error_message(const govern_policy_result* result,
                                                                 size_t i);
/* The id of the limit (from limits.json) that turned an allow or approval into DENY, or NULL. The
 * decision log records such a decision with the determining policy "limit:<id>". */
GOVERN_POLICY_API const char* govern_policy_result_limit(const govern_policy_result* result);
/* Why that limit could not be applied (e.g. "limit daily-spend: context.cost_cents is missing": a budget
 * without its amount denies), or NULL. Recorded among the erroring policies as "limit:<id>". */
GOVERN_POLICY_API const char* govern_policy_result_limit_error(const govern_policy_result* result);
/* The message of the last decide's nonzero return; "" after OK. */
GOVERN_POLICY_API const char* govern_policy_result_message(const govern_policy_result* result);
/* The version of the bundle that decided (0 for an engine made from text). */
GOVERN_POLICY_API uint64_t govern_policy_result_bundle_version(const govern_policy_result* result);
/* The recorded decision's id (a UUID, the telemetry event id), or "" when no log is open. */
GOVERN_POLICY_API const char* govern_policy_result_decision_id(const govern_policy_result* result);

/* ---- Stats ---- */

typedef enum {
  GOVERN_POLICY_STAT_DECISIONS = 0,        /* decide calls that returned OK */
  GOVERN_POLICY_STAT_ALLOWED = 1,          /* of those, allowed */
  GOVERN_POLICY_STAT_DECIDE_ERRORS = 2,    /* decide calls that returned an error */
  GOVERN_POLICY_STAT_BUNDLE_VERSION = 3,   /* loaded bundle version (0: made from text) */
  GOVERN_POLICY_STAT_BUNDLES_ACCEPTED = 4, /* bundles loaded, the first included */
  GOVERN_POLICY_STAT_BUNDLES_REFUSED = 5,  /* swaps refused */
  GOVERN_POLICY_STAT_BUNDLES_UNCHANGED = 6,
  GOVERN_POLICY_STAT_LOG_RECORDED = 7, /* decision log: recorded */
  GOVERN_POLICY_STAT_LOG_SYNCED = 8,   /* made durable */
  GOVERN_POLICY_STAT_LOG_FAILED = 9,   /* accepted, then lost because their sync failed */
  GOVERN_POLICY_STAT_LOG_REFUSED = 10, /* not recorded (decide returned RECORD) */
  GOVERN_POLICY_STAT_LOG_PENDING_BYTES = 11,
  GOVERN_POLICY_STAT_POLICIES = 12,          /* policies in the loaded set */
  GOVERN_POLICY_STAT_ENTITIES = 13,          /* entities in the loaded store */
  GOVERN_POLICY_STAT_LIMITS = 14,            /* limits in the loaded set */
  GOVERN_POLICY_STAT_APPROVAL_REQUIRED = 15, /* decide calls that returned OK with APPROVAL_REQUIRED */
  GOVERN_POLICY_STAT_LIMITED = 16,           /* of the DENY ones, those a limit denied */
  GOVERN_POLICY_STAT_LIMIT_COUNTERS = 17     /* limit counters held now (one per principal per limit) */
} govern_policy_stat;

/* One counter; 0 for an unknown key or a NULL engine. Thread-safe (counters are read without stopping
 * decisions, so two of them may be a moment apart). */
GOVERN_POLICY_API uint64_t govern_policy_engine_stat(const govern_policy_engine* engine, int stat);
/* The last refused bundle's "<reason>: <detail>", or NULL if none was refused. Free with
 * govern_policy_string_free. Thread-safe. */
GOVERN_POLICY_API char* govern_policy_engine_last_refusal(const govern_policy_engine* engine);

#ifdef __cplusplus
}
#endif

#endif /* GOVERN_POLICY_H_ */
