// SCIM over HTTP: authentication, request parsing, projection and the list, bulk and discovery bodies.
#include "services/scim/api.h"

#include <charconv>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "scim/error.h"
#include "scim/resource.h"
#include "scim/schema.h"
#include "services/job_queue.h"
#include "services/keys/keys.h"
#include "services/scim/store.h"

namespace govern::scim_service {

using nlohmann::json;
using scim::Error;

namespace {

constexpr const char* kContentType = "application/scim+json";
constexpr const char* kBase = "/scim/v2";

net::Response ScimJson(int status, const json& body) {
  net::Response r(status, body.dump(-1, ' ', false, json::error_handler_t::replace), kContentType);
  return r;
}

net::Response ErrorResponse(const Error& e) {
  net::Response r = ScimJson(e.status, e.ToJson());
  if (e.status == 401) r.headers.Set("WWW-Authenticate", "Bearer realm=\"scim\"");
  if (e.status == 503) r.headers.Set("Retry-After", "1");
  return r;
}

const scim::ResourceType* TypeFor(std::string_view endpoint) {
  if (endpoint == "Users") return &scim::UserResourceType();
  if (endpoint == "Groups") return &scim::GroupResourceType();
  return nullptr;
}

bool ParseInt(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Replaces "bulkId:<id>" strings anywhere in `v` by the ids created earlier in the same Bulk request.
void ResolveBulkIds(json* v, const std::map<std::string, std::string>& ids) {
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    if (s.rfind("bulkId:", 0) == 0) {
      auto it = ids.find(s.substr(7));
      if (it != ids.end()) *v = it->second;
    }
  } else if (v->is_array() || v->is_object()) {
    for (auto& e : *v) ResolveBulkIds(&e, ids);
  }
}

json ServiceProviderConfig(const ApiOptions& o) {
  return {{"schemas", {"urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"}},
          {"documentationUri", "https://github.com/govern/govern/blob/main/docs/scim.md"},
          {"patch", {{"supported", true}}},
          {"bulk",
           {{"supported", true},
            {"maxOperations", o.bulk_max_operations},
            {"maxPayloadSize", o.bulk_max_payload}}},
          {"filter", {{"supported", true}, {"maxResults", o.max_results}}},
          {"changePassword", {{"supported", false}}},
          {"sort", {{"supported", true}}},
          {"etag", {{"supported", true}}},
          {"authenticationSchemes",
           {{{"type", "oauthbearertoken"},
             {"name", "Bearer key"},
             {"description", "A per-organisation key (gvs_...) from `govern scim key create`"},
             {"primary", true}}}},
          {"meta", {{"resourceType", "ServiceProviderConfig"}}}};
}

}  // namespace

struct Api::Impl {
  Store* store;
  service_keys::KeyCache* keys;
  ApiOptions opt;
  std::unique_ptr<services::JobQueue> jobs;

  struct Call {
    net::Request req;
    net::Responder out;
    std::string org;
    std::string key_id;
  };
  using Body = std::function<net::Response(Call&)>;

  std::string BaseUrl(const net::Request& req) const {
    if (!opt.public_url.empty()) return opt.public_url;
    auto host = req.headers.Get("Host");
    return "http://" + std::string(host ? *host : "localhost") + kBase;
  }

  // Checks the bearer key, then runs `body` on an API thread.
  void Authorized(net::Request&& req, net::Responder out, Body body) {
    std::string_view key = net::BearerToken(req).value_or(std::string_view{});
    if (key.empty())
      return out.Send(
          ErrorResponse(scim::Unauthorized("a bearer key is required (Authorization: Bearer gvs_...)")));
    auto call = std::make_shared<Call>(Call{std::move(req), std::move(out), {}, {}});
    std::string key_copy(key);
    keys->Verify(key_copy, [this, call, body = std::move(body)](Result<service_keys::KeyIdentity> who) {
      if (!who.ok()) {
        if (who.status().code() == Code::kUnauthenticated) {
          return call->out.Send(ErrorResponse(scim::Unauthorized("the bearer key is not valid")));
        }
        return call->out.Send(
            ErrorResponse(scim::Unavailable503("the key store is unavailable; retry later")));
      }
      call->org = who->org;
      call->key_id = who->key_id;
      bool posted = jobs->Post([call, body] { call->out.Send(body(*call)); });
      if (!posted)
        call->out.Send(ErrorResponse(scim::Unavailable503("too many requests waiting; retry later")));
    });
  }

  // The resource as answered: projected, with meta.location, ETag and (for 201) Location headers.
  net::Response ResourceResponse(int status, const scim::ResourceType& type, json r,
                                 const net::Request& req) const {
    std::string location = BaseUrl(req) + type.endpoint + "/" + r["id"].get<std::string>();
    r["meta"]["location"] = location;
    AddRefs(BaseUrl(req), &r);
    std::string etag = r["meta"].value("version", "");
    json shown = Project(type, r, req);
    net::Response resp = ScimJson(status, shown);
    if (!etag.empty()) resp.headers.Set("ETag", etag);
    if (status == 201) resp.headers.Set("Location", location);
    return resp;
  }

  // The `$ref` of each group member (a User or a Group, by its "type") and of each of a user's groups:
  // the URI of that resource (RFC 7643 sections 4.1.2 and 4.2).
  static void AddRefs(const std::string& base, json* r) {
    if (auto m = r->find("members"); m != r->end() && m->is_array()) {
      for (json& e : *m) {
        if (e.contains("value"))
          e["$ref"] = base + (e.value("type", "User") == "Group" ? "/Groups/" : "/Users/") +
                      e["value"].get<std::string>();
      }
    }
    if (auto g = r->find("groups"); g != r->end() && g->is_array()) {
      for (json& e : *g) {
        if (e.contains("value")) e["$ref"] = base + "/Groups/" + e["value"].get<std::string>();
      }
    }
  }

  static json Project(const scim::ResourceType& type, const json& r, const net::Request& req) {
    auto attrs = req.QueryParam("attributes");
    auto excluded = req.QueryParam("excludedAttributes");
    return scim::Project(
        type, r, attrs ? scim::ParseAttributeList(type, *attrs) : std::vector<scim::AttrPath>{},
        excluded ? scim::ParseAttributeList(type, *excluded) : std::vector<scim::AttrPath>{});
  }

  // `limit`: the largest body (0: max_body_bytes; Bulk passes bulk_max_payload).
  Error ParseBody(const net::Request& req, json* out, size_t limit = 0) const {
    if (limit == 0) limit = opt.max_body_bytes;
    if (req.body.size() > limit) {
      return scim::PayloadTooLarge("the request body is larger than " + std::to_string(limit) + " bytes");
    }
    *out = json::parse(req.body, nullptr, false);
    if (out->is_discarded()) return scim::InvalidSyntax("the body is not JSON");
    return Error::Ok();
  }

  static std::string IfMatch(const net::Request& req) {
    auto v = req.headers.Get("If-Match");
    return v ? std::string(*v) : std::string();
  }

  net::Response List(Call& c, const scim::ResourceType& type, SearchQuery q,
                     const std::vector<scim::AttrPath>& attrs, const std::vector<scim::AttrPath>& excluded) {
    q.count = std::min(q.count, opt.max_results);
    SearchResult result;
    Error err = store->Search(c.org, type, q, &result);
    if (!err.ok()) return ErrorResponse(err);
    json resources = json::array();
    std::string base = BaseUrl(c.req);
    for (json& r : result.resources) {
      r["meta"]["location"] = base + type.endpoint + "/" + r["id"].get<std::string>();
      AddRefs(base, &r);
      resources.push_back(scim::Project(type, r, attrs, excluded));
    }
    json body = {{"schemas", {scim::kListResponseSchema}},
                 {"totalResults", result.total},
                 {"startIndex", std::max<int64_t>(q.start_index, 1)},
                 {"itemsPerPage", resources.size()},
                 {"Resources", std::move(resources)}};
    return ScimJson(200, body);
  }

  net::Response ListFromQuery(Call& c, const scim::ResourceType& type) {
    SearchQuery q;
    const net::Request& req = c.req;
    if (auto f = req.QueryParam("filter")) q.filter = *f;
    if (auto s = req.QueryParam("sortBy")) q.sort_by = *s;
    if (auto o = req.QueryParam("sortOrder")) q.descending = scim::EqualsIgnoreCase(*o, "descending");
    if (auto s = req.QueryParam("startIndex"); s && !ParseInt(*s, &q.start_index)) {
      return ErrorResponse(scim::InvalidValue("startIndex must be an integer"));
    }
    if (auto s = req.QueryParam("count"); s && !ParseInt(*s, &q.count)) {
      return ErrorResponse(scim::InvalidValue("count must be an integer"));
    }
    auto attrs = req.QueryParam("attributes");
    auto excluded = req.QueryParam("excludedAttributes");
    return List(c, type, q, attrs ? scim::ParseAttributeList(type, *attrs) : std::vector<scim::AttrPath>{},
                excluded ? scim::ParseAttributeList(type, *excluded) : std::vector<scim::AttrPath>{});
  }

  net::Response ListFromBody(Call& c, const scim::ResourceType& type) {
    json body;
    Error err = ParseBody(c.req, &body);
    if (!err.ok()) return ErrorResponse(err);
    if (!body.is_object()) return ErrorResponse(scim::InvalidSyntax("a SearchRequest is an object"));
    SearchQuery q;
    std::vector<scim::AttrPath> attrs, excluded;
    try {
      q.filter = body.value("filter", "");
      q.sort_by = body.value("sortBy", "");
      q.descending = scim::EqualsIgnoreCase(body.value("sortOrder", "ascending"), "descending");
      q.start_index = body.value("startIndex", int64_t{1});
      q.count = body.value("count", int64_t{100});
      auto list = [&](const char* name) {
        std::string joined;
        if (body.contains(name)) {
          for (const json& a : body[name]) joined += a.get<std::string>() + ",";
        }
        return scim::ParseAttributeList(type, joined);
      };
      attrs = list("attributes");
      excluded = list("excludedAttributes");
    } catch (const json::exception&) {
      return ErrorResponse(scim::InvalidSyntax("a SearchRequest member has the wrong type"));
    }
    return List(c, type, q, attrs, excluded);
  }

  // One operation, shared by the routes and Bulk. `id` is empty for POST and list.
  net::Response Run(Call& c, net::Method method, const scim::ResourceType& type, const std::string& id,
                    const json* body, const std::string& if_match) {
    json out;
    Error err;
    switch (method) {
      case net::Method::kPost:
        err = store->Create(c.org, type, *body, c.key_id, &out);
        if (!err.ok()) return ErrorResponse(err);
        return ResourceResponse(201, type, std::move(out), c.req);
      case net::Method::kGet:
        err = store->Get(c.org, type, id, &out);
        break;
      case net::Method::kPut:
        err = store->Replace(c.org, type, id, *body, if_match, c.key_id, &out);
        break;
      case net::Method::kPatch:
        err = store->Patch(c.org, type, id, *body, if_match, c.key_id, &out);
        break;
      case net::Method::kDelete:
        err = store->Delete(c.org, type, id, if_match, c.key_id);
        if (!err.ok()) return ErrorResponse(err);
        return net::Response(204, "", kContentType);
      default:
        return ErrorResponse(scim::Error{405, "", "method not allowed"});
    }
    if (!err.ok()) return ErrorResponse(err);
    if (out.is_null()) return net::Response(204, "", kContentType);  // a members-only group PATCH
    if (method == net::Method::kGet) {
      if (auto none = c.req.headers.Get("If-None-Match"); none && *none == out["meta"].value("version", "")) {
        net::Response r(304, "", kContentType);
        r.headers.Set("ETag", std::string(*none));
        return r;
      }
    }
    return ResourceResponse(200, type, std::move(out), c.req);
  }

  net::Response Bulk(Call& c) {
    if (c.req.body.size() > opt.bulk_max_payload) {
      return ErrorResponse(scim::PayloadTooLarge("the bulk request is larger than " +
                                                 std::to_string(opt.bulk_max_payload) + " bytes"));
    }
    json body;
    Error err = ParseBody(c.req, &body, opt.bulk_max_payload);
    if (!err.ok()) return ErrorResponse(err);
    const json* ops = body.is_object() ? scim::FindMember(body, "Operations") : nullptr;
    if (ops == nullptr || !ops->is_array())
      return ErrorResponse(scim::InvalidSyntax("Operations must be an array"));
    if (ops->size() > opt.bulk_max_operations) {
      return ErrorResponse(
          scim::PayloadTooLarge("more than " + std::to_string(opt.bulk_max_operations) + " operations"));
    }
    int64_t fail_on = body.value("failOnErrors", int64_t{0});
    int64_t failures = 0;
    std::map<std::string, std::string> created;
    json results = json::array();
    for (const json& op : *ops) {
      json result = json::object();
      auto fail = [&](const Error& e) {
        result["status"] = std::to_string(e.status);
        result["response"] = e.ToJson();
        ++failures;
      };
      std::string method_name = op.is_object() ? op.value("method", "") : "";
      std::string path = op.is_object() ? op.value("path", "") : "";
      std::string bulk_id = op.is_object() ? op.value("bulkId", "") : "";
      result["method"] = method_name;
      if (!bulk_id.empty()) result["bulkId"] = bulk_id;
      net::Method method = net::ParseMethod(method_name);
      for (char& ch : method_name) ch = static_cast<char>(toupper(ch));
      method = net::ParseMethod(method_name);
      // path: /Users, /Groups, /Users/{id} (the id may be bulkId:x)
      std::string_view p = path;
      if (!p.empty() && p.front() == '/') p.remove_prefix(1);
      size_t slash = p.find('/');
      const scim::ResourceType* type = TypeFor(p.substr(0, slash));
      std::string id = slash == std::string_view::npos ? "" : std::string(p.substr(slash + 1));
      if (id.rfind("bulkId:", 0) == 0) {
        auto it = created.find(id.substr(7));
        id = it != created.end() ? it->second : "";
      }
      json data = op.is_object() && op.contains("data") ? op["data"] : json();
      ResolveBulkIds(&data, created);
      if (type == nullptr || (method == net::Method::kPost) != id.empty() ||
          !(method == net::Method::kPost || method == net::Method::kPut || method == net::Method::kPatch ||
            method == net::Method::kDelete)) {
        fail(scim::InvalidValue("bad method or path in bulk operation: " + method_name + " " +
                                path.substr(0, 200)));
      } else if (method != net::Method::kDelete && data.is_null()) {
        fail(scim::InvalidSyntax("bulk operation without data"));
      } else {
        std::string version = op.value("version", "");
        net::Response r = Run(c, method, *type, id, &data, version);
        result["status"] = std::to_string(r.status);
        if (r.status >= 400) {
          result["response"] = json::parse(r.body, nullptr, false);
          ++failures;
        } else if (r.status != 204) {
          json resource = json::parse(r.body, nullptr, false);
          std::string new_id = resource.value("id", "");
          if (method == net::Method::kPost && !bulk_id.empty()) created[bulk_id] = new_id;
          if (resource.contains("meta")) {
            result["location"] = resource["meta"].value("location", "");
            result["version"] = resource["meta"].value("version", "");
          }
        }
      }
      results.push_back(std::move(result));
      if (fail_on > 0 && failures >= fail_on) break;
    }
    return ScimJson(200, {{"schemas", {scim::kBulkResponseSchema}}, {"Operations", std::move(results)}});
  }
};

Api::Api(Store* store, service_keys::KeyCache* keys, ApiOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->store = store;
  impl_->keys = keys;
  impl_->opt = std::move(options);
  impl_->jobs = std::make_unique<services::JobQueue>(impl_->opt.threads, impl_->opt.max_queued);
}

Api::~Api() {
  if (impl_ && impl_->jobs) impl_->jobs->Stop();
}

void Api::AddRoutes(net::Router& router) {
  Impl* im = impl_.get();
  const std::string base = kBase;
  // The HTTP layer reads bodies up to twice the limits, so that a body somewhat over gets a SCIM Error
  // (413) from ParseBody or Bulk; beyond that it stops reading and answers 413 itself (problem+json).
  net::RouteOptions small{.max_body_bytes = 2 * im->opt.max_body_bytes};
  net::RouteOptions bulk{.cls = net::RequestClass::kBulk, .max_body_bytes = 2 * im->opt.bulk_max_payload};

  router.AddSync(net::Method::kGet, base + "/ServiceProviderConfig",
                 [im](net::Request&) { return ScimJson(200, ServiceProviderConfig(im->opt)); });
  router.AddSync(net::Method::kGet, base + "/ResourceTypes", [im](net::Request& req) {
    json list = json::array();
    for (const scim::ResourceType* t : {&scim::UserResourceType(), &scim::GroupResourceType()}) {
      list.push_back(t->ToJson(im->BaseUrl(req)));
    }
    return ScimJson(200, {{"schemas", {scim::kListResponseSchema}},
                          {"totalResults", list.size()},
                          {"startIndex", 1},
                          {"itemsPerPage", list.size()},
                          {"Resources", list}});
  });
  router.AddSync(net::Method::kGet, base + "/ResourceTypes/{name}", [im](net::Request& req) {
    for (const scim::ResourceType* t : {&scim::UserResourceType(), &scim::GroupResourceType()}) {
      if (t->name == req.Param("name")) return ScimJson(200, t->ToJson(im->BaseUrl(req)));
    }
    return ErrorResponse(
        scim::NotFoundError("no resource type " + std::string(req.Param("name")).substr(0, 100)));
  });
  router.AddSync(net::Method::kGet, base + "/Schemas", [im](net::Request& req) {
    json list = json::array();
    for (const scim::Schema* s : {&scim::UserSchema(), &scim::EnterpriseUserSchema(), &scim::GroupSchema()}) {
      list.push_back(s->ToJson(im->BaseUrl(req)));
    }
    return ScimJson(200, {{"schemas", {scim::kListResponseSchema}},
                          {"totalResults", list.size()},
                          {"startIndex", 1},
                          {"itemsPerPage", list.size()},
                          {"Resources", list}});
  });
  router.AddSync(net::Method::kGet, base + "/Schemas/{id}", [im](net::Request& req) {
    for (const scim::Schema* s : {&scim::UserSchema(), &scim::EnterpriseUserSchema(), &scim::GroupSchema()}) {
      if (s->id == req.Param("id")) return ScimJson(200, s->ToJson(im->BaseUrl(req)));
    }
    return ErrorResponse(scim::NotFoundError("no schema " + std::string(req.Param("id")).substr(0, 200)));
  });

  for (const char* endpoint : {"Users", "Groups"}) {
    const scim::ResourceType* type = TypeFor(endpoint);
    std::string collection = base + "/" + endpoint;
    router.Add(
        net::Method::kGet, collection,
        [im, type](net::Request&& req, net::Responder out) {
          im->Authorized(std::move(req), std::move(out),
                         [im, type](Impl::Call& c) { return im->ListFromQuery(c, *type); });
        },
        small);
    router.Add(
        net::Method::kPost, collection + "/.search",
        [im, type](net::Request&& req, net::Responder out) {
          im->Authorized(std::move(req), std::move(out),
                         [im, type](Impl::Call& c) { return im->ListFromBody(c, *type); });
        },
        small);
    router.Add(
        net::Method::kPost, collection,
        [im, type](net::Request&& req, net::Responder out) {
          im->Authorized(std::move(req), std::move(out), [im, type](Impl::Call& c) {
            json body;
            Error err = im->ParseBody(c.req, &body);
            if (!err.ok()) return ErrorResponse(err);
            return im->Run(c, net::Method::kPost, *type, "", &body, "");
          });
        },
        small);
    for (net::Method m : {net::Method::kGet, net::Method::kPut, net::Method::kPatch, net::Method::kDelete}) {
      router.Add(
          m, collection + "/{id}",
          [im, type, m](net::Request&& req, net::Responder out) {
            im->Authorized(std::move(req), std::move(out), [im, type, m](Impl::Call& c) {
              json body;
              if (m == net::Method::kPut || m == net::Method::kPatch) {
                Error err = im->ParseBody(c.req, &body);
                if (!err.ok()) return ErrorResponse(err);
              }
              return im->Run(c, m, *type, std::string(c.req.Param("id")), &body, Impl::IfMatch(c.req));
            });
          },
          small);
    }
  }
  router.Add(
      net::Method::kPost, base + "/Bulk",
      [im](net::Request&& req, net::Responder out) {
        im->Authorized(std::move(req), std::move(out), [im](Impl::Call& c) { return im->Bulk(c); });
      },
      bulk);
}

}  // namespace govern::scim_service
