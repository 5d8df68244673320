// The model-stub service as `govern serve model-stub` runs it: configuration keys, Start, Endpoints, Stop.
#include "services/model_stub/service.h"

#include <gtest/gtest.h>

namespace govern::model_stub {
namespace {

TEST(ModelStubService, StartsFromConfigurationAndStops) {
  auto svc = NewModelStubService();
  EXPECT_EQ(svc->name(), "model-stub");
  EXPECT_FALSE(svc->needs_database());
  config::Schema schema;
  svc->DeclareConfig(schema);
  ASSERT_NE(schema.Find("model_stub.tokens_per_second"), nullptr);
  config::LoadOptions lo;
  lo.flags = {{"model_stub.listen", "127.0.0.1:0"}, {"model_stub.models", "a,b"}};
  auto cfg = config::Config::Load(schema, lo);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->GetInt("model_stub.tokens_per_second"), 0);
  services::Context ctx;
  ctx.config = &*cfg;
  ASSERT_TRUE(svc->Start(ctx).ok());
  auto eps = svc->Endpoints();
  ASSERT_EQ(eps.size(), 1u);
  EXPECT_EQ(eps[0].protocol, "http");
  EXPECT_NE(eps[0].address, "127.0.0.1:0");  // the bound port
  svc->Stop();
  svc->Stop();  // idempotent
  EXPECT_TRUE(svc->Endpoints().empty());

  lo.flags = {{"model_stub.listen", "nowhere"}};
  EXPECT_FALSE(config::Config::Load(schema, lo).ok());
}

}  // namespace
}  // namespace govern::model_stub
