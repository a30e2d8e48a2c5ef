import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { ERROR_DOCS_PATH } from "../../http/openapi/errors";
import { validationHook } from "../../http/validation";
import { errorCatalogHandler, errorCatalogRoute } from "./catalog";
import { errorPage } from "./page";

export const errorsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
  errorCatalogRoute,
  errorCatalogHandler,
);

/** The catalog as a page of the served docs: out of the OpenAPI document, like the reference page. */
export const errorDocsPath = { app: errorPage, paths: [["get", ERROR_DOCS_PATH]] } as const;
