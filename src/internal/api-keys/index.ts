import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { getApiKeyHandler, getApiKeyRoute } from "./get";
import { listApiKeysHandler, listApiKeysRoute } from "./list";
import { mintApiKeyHandler, mintApiKeyRoute } from "./mint";
import { revokeApiKeyHandler, revokeApiKeyRoute } from "./revoke";
import { rotateApiKeyHandler, rotateApiKeyRoute } from "./rotate";
import { updateApiKeyHandler, updateApiKeyRoute } from "./update";

export const apiKeysInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(mintApiKeyRoute, mintApiKeyHandler)
  .openapi(listApiKeysRoute, listApiKeysHandler)
  .openapi(getApiKeyRoute, getApiKeyHandler)
  .openapi(rotateApiKeyRoute, rotateApiKeyHandler)
  .openapi(revokeApiKeyRoute, revokeApiKeyHandler)
  .openapi(updateApiKeyRoute, updateApiKeyHandler);
