// `govern serve dns`: the authoritative DNS server over zones kept in PostgreSQL, and the HTTP API that
// changes them.
//
// Start loads every zone (Store::LoadAll) into a ZoneSet and starts dns::Server on dns.listen. One
// thread holds a LISTEN govern_dns connection: a notification names a zone, which alone is rebuilt; the
// new ZoneSet reuses every other zone's shared_ptr (and so its caches) and is swapped in. When that
// connection is lost it reconnects and reloads everything, since NOTIFY is not durable. The HTTP API
// (dns.api_listen; off when dns.api_token is empty) runs its database calls on a few threads of its
// own so the event loops never wait on PostgreSQL. Any number of replicas can run on one database.
#pragma once

#include <memory>

#include "services/service.h"

namespace govern::dns_service {

std::unique_ptr<services::Service> NewDnsService();

}  // namespace govern::dns_service
