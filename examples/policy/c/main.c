/* Embedding Govern's policy engine from C: load a policy set and entities, decide an allowed and two
 * denied requests, print each decision with the policies that determined it, and show an error.
 * Build: cc main.c -lgovern_policy (CMake: examples/policy/c). */
#include <stdio.h>
#include <stdlib.h>

#include "govern_policy.h"

static const char* kPolicies =
    "@id(\"no-internal-urls\")\n"
    "forbid (principal, action, resource) when { context has url && context.url like \"*internal*\" };\n"
    "@id(\"research-web\")\n"
    "permit (principal in Team::\"research\", action == Action::\"call_tool\", resource == "
    "Tool::\"web_search\");\n";

static const char* kEntities =
    "[{\"uid\": {\"type\": \"Team\", \"id\": \"research\"}, \"attrs\": {}, \"parents\": []},\n"
    " {\"uid\": {\"type\": \"Agent\", \"id\": \"ada\"}, \"attrs\": {},\n"
    "  \"parents\": [{\"type\": \"Team\", \"id\": \"research\"}]},\n"
    " {\"uid\": {\"type\": \"Agent\", \"id\": \"bob\"}, \"attrs\": {}, \"parents\": []}]";

/* Prints "<label>: <decision> by <policy> (<@id>)" or "(no policy applies)". */
static void print_result(const char* label, const govern_policy_result* r) {
  size_t i, n = govern_policy_result_reason_count(r);
  printf("%s: %s", label, govern_policy_decision_name(govern_policy_result_decision(r)));
  if (n == 0) printf(" (no policy applies)");
  for (i = 0; i < n; ++i) {
    const char* id = govern_policy_result_reason_annotation(r, i, "id");
    printf(" by %s (%s)", govern_policy_result_reason(r, i), id ? id : "-");
  }
  printf("\n");
}

int main(void) {
  govern_policy_engine* engine = NULL;
  govern_policy_result* result = NULL;
  char* error = NULL;
  int rc;

  if (govern_policy_abi_version() != GOVERN_POLICY_ABI_VERSION) {
    fprintf(stderr, "libgovern_policy.so has ABI %u, this program wants %d\n", govern_policy_abi_version(),
            GOVERN_POLICY_ABI_VERSION);
    return 1;
  }
  rc = govern_policy_engine_from_text(kPolicies, kEntities, &engine, &error);
  if (rc != GOVERN_POLICY_OK) {
    fprintf(stderr, "engine: %s: %s\n", govern_policy_error_name(rc), error);
    govern_policy_string_free(error);
    return 1;
  }
  /* One result per thread, reused for every decision. */
  result = govern_policy_result_new();
  if (result == NULL) return 1;

  rc = govern_policy_decide(engine, result, "Agent", "ada", "Action", "call_tool", "Tool", "web_search",
                            "{\"url\": \"https://example.com\"}");
  if (rc != GOVERN_POLICY_OK) return 1;
  print_result("research-web allows ada", result);

  rc = govern_policy_decide(engine, result, "Agent", "ada", "Action", "call_tool", "Tool", "web_search",
                            "{\"url\": \"https://wiki.internal.example\"}");
  if (rc != GOVERN_POLICY_OK) return 1;
  print_result("guardrail", result);

  rc =
      govern_policy_decide(engine, result, "Agent", "bob", "Action", "call_tool", "Tool", "web_search", NULL);
  if (rc != GOVERN_POLICY_OK) return 1;
  print_result("bob", result);

  /* A context that is not a JSON object: an error code, the message in the result, and a deny. */
  rc = govern_policy_decide(engine, result, "Agent", "ada", "Action", "call_tool", "Tool", "web_search",
                            "[1, 2]");
  printf("bad context: %s: %s (decision %s)\n", govern_policy_error_name(rc),
         govern_policy_result_message(result),
         govern_policy_decision_name(govern_policy_result_decision(result)));

  printf("%llu decisions, %llu allowed\n",
         (unsigned long long)govern_policy_engine_stat(engine, GOVERN_POLICY_STAT_DECISIONS),
         (unsigned long long)govern_policy_engine_stat(engine, GOVERN_POLICY_STAT_ALLOWED));
  govern_policy_result_free(result);
  govern_policy_engine_free(engine);
  return rc == GOVERN_POLICY_ERR_REQUEST ? 0 : 1;
}
