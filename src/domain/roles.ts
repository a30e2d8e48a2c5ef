export const PLATFORM_ROLES = ["super_admin", "admin"] as const;
export const AGENCY_OWNER_ROLES = ["media_agency", "broker"] as const;
export const AGENCY_ROLES = ["media_agency", "broker", "team_lead", "agent", "assistant", "viewer"] as const;
export const ROLES = [...PLATFORM_ROLES, ...AGENCY_ROLES] as const;
export type Role = (typeof ROLES)[number];

export const SCOPES = [
  "listings:read",
  "listings:write",
  "media:write",
  "scheduling:read",
  "users:read",
  "orders:read",
  "webhooks:read",
  "webhooks:write",
  "tours:read",
  "tours:write",
  "admin",
] as const;
export type Scope = (typeof SCOPES)[number];
export const DEFAULT_SCOPES: Scope[] = SCOPES.filter((s) => s !== "admin");

export const isPlatformRole = (role: string) => (PLATFORM_ROLES as readonly string[]).includes(role);

/** Who is calling: resolved once by authentication, read by every later guard and handler. */
export interface Caller {
  via: "api_key" | "session";
  agencyId: string;
  role: Role;
  scopes: ReadonlySet<Scope>;
  /** The user the key was minted by, or the session's user. */
  userId: string;
  keyId?: string;
}
