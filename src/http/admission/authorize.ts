import type { Caller, Role, Scope } from "../../domain/roles";
import { DomainError } from "../../lib/errors";

export interface Permission {
  scope?: Scope;
  /** Scopes needed besides `scope`, checked after it. */
  alsoScopes?: readonly Scope[];
  /** Caller roles permitted on the route; every role when omitted. */
  roles?: readonly Role[];
}

/** Refuses a caller that lacks the route's scope (403 `auth.scope_denied`) or role (403 `role_forbidden`). */
export function authorize(caller: Caller, { scope, alsoScopes = [], roles }: Permission): void {
  if (scope && !caller.scopes.has(scope)) {
    throw new DomainError("auth.scope_denied", {
      message: `The API key lacks the '${scope}' scope.`,
      details: { required_scope: scope },
    });
  }
  const missing = alsoScopes.filter((s) => !caller.scopes.has(s));
  if (missing.length) {
    throw new DomainError("auth.scope_denied", {
      message: `This endpoint also needs ${missing.map((s) => `'${s}'`).join(", ")}, which the API key lacks.`,
      details: { required_scope: missing[0], missing_scopes: missing },
    });
  }
  if (roles && !roles.includes(caller.role)) {
    throw new DomainError("role_forbidden", {
      message: `The role '${caller.role}' is not permitted on this endpoint.`,
      details: { role: caller.role, allowed_roles: roles },
    });
  }
}
