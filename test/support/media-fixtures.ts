import { expect } from "vitest";
import { internal, type Tenant } from "./harness";

/** Gives the tenant's agent an S3-compatible delivery destination at `endpoint`, through the internal API. */
export async function configureDestination(t: Tenant, endpoint: string) {
  const r = await internal(`/internal/v1/users/${t.agent.id}/delivery-destination`, {
    method: "PUT",
    body: {
      endpoint_url: endpoint,
      bucket: "agent-bucket",
      region: "us-east-1",
      access_key_id: "AKIDAGENT",
      secret_access_key: "agent-secret-access-key-0123456789",
    },
  });
  expect(r.status, r.text).toBe(200);
}
