/**
 * People, API tokens and one's account, described (lib/api-doc.ts). The checks at the end hold
 * the response schemas to the types the routes return.
 */
import { z } from "zod";
import {
  answers,
  authed,
  body,
  id,
  idPath,
  instant,
  jsonOf,
  noContent,
  nullableInstant,
  operation,
  tenantQuery,
  uuid,
  type ApiDescription,
  type Out,
  type Ret,
  type Same,
} from "../api-doc";
import {
  acceptInviteSchema,
  changePasswordSchema,
  inviteSchema as inviteBodySchema,
  listInvitesSchema,
  memberChangeSchema,
  membersQuerySchema,
  type acceptInvite,
  type changeMemberRole,
  type inviteUser,
  type listInvites,
  type listMembers,
} from "../auth/accounts";
import { createTokenSchema, type createApiToken, type listApiTokens } from "../auth/tokens";

export const tenantRef = z.object({ id, slug: z.string(), name: z.string() });
const role = z.enum(["member", "operator"]);

const inviteSchema = z
  .object({
    id,
    email: z.string(),
    tenant: tenantRef.nullable(),
    role: role.nullable(),
    platformAdmin: z.boolean(),
    state: z.enum(["expired", "pending", "accepted", "revoked"]),
    expiresAt: instant,
    createdAt: instant,
    createdBy: z.string().nullable(),
    link: z.string().optional().meta({ description: "The invitation link: only in the answer that made it" }),
    mailed: z.boolean().optional(),
  })
  .meta({ id: "Invite" });
const inviteListSchema = z.object({ invites: z.array(inviteSchema) });
const acceptedInviteSchema = z.object({ email: z.string() });

const memberSchema = z
  .object({ userId: id, email: z.string(), name: z.string(), role, since: instant })
  .meta({ id: "Member" });
const memberListSchema = z.object({ members: z.array(memberSchema) });

const tokenSchema = z
  .object({
    id,
    name: z.string(),
    prefix: z.string(),
    scopes: z.array(z.enum(["read", "write"])),
    expiresAt: nullableInstant,
    createdAt: instant,
    lastUsedAt: nullableInstant,
  })
  .meta({ id: "ApiToken" });
const tokenListSchema = z.object({ tokens: z.array(tokenSchema) });
const createdTokenSchema = z.object({
  token: z.string().meta({ description: "The secret (cvy_…), shown this once" }),
  record: tokenSchema,
});

export const peopleOperations = {
  password: operation("post", "/api/v1/account/password", {
    tags: ["Account"],
    summary: "Change one's own password (browser session); every session signs in again",
    security: [{ sessionCookie: [] }],
    requestBody: body(changePasswordSchema),
    responses: authed({ "204": noContent }, 400, 413),
  }),
  tokens: operation("get", "/api/v1/tokens", {
    tags: ["API tokens"],
    summary: "The caller's API tokens",
    responses: authed({ "200": jsonOf(tokenListSchema, "The tokens (never their secrets)") }),
  }),
  createToken: operation("post", "/api/v1/tokens", {
    tags: ["API tokens"],
    summary: "Create a token (the secret is shown once)",
    requestBody: body(createTokenSchema),
    responses: authed({ "201": jsonOf(createdTokenSchema, "The secret and the token's record") }, 400, 413),
  }),
  revokeToken: operation("delete", "/api/v1/tokens/{id}", {
    tags: ["API tokens"],
    summary: "Revoke one of the caller's tokens",
    requestParams: { path: idPath("The token") },
    responses: authed({ "204": noContent }, 404),
  }),
  members: operation("get", "/api/v1/members", {
    tags: ["People"],
    summary: "The people of a tenant and their roles (operators: their own)",
    requestParams: { query: membersQuerySchema },
    responses: authed({ "200": jsonOf(memberListSchema, "The members") }, 400),
  }),
  changeMember: operation("patch", "/api/v1/members/{userId}", {
    tags: ["People"],
    summary: "Change a member's role",
    requestParams: { path: z.object({ userId: uuid("The user") }) },
    requestBody: body(memberChangeSchema),
    responses: authed({ "200": jsonOf(memberSchema, "The member") }, 400, 404, 409),
  }),
  removeMember: operation("delete", "/api/v1/members/{userId}", {
    tags: ["People"],
    summary: "Remove a member from the tenant",
    requestParams: { path: z.object({ userId: uuid("The user") }), query: tenantQuery },
    responses: authed({ "204": noContent }, 404, 409),
  }),
  invites: operation("get", "/api/v1/invites", {
    tags: ["People"],
    summary: "Invitations (operators: their tenant's)",
    requestParams: { query: listInvitesSchema },
    responses: authed({ "200": jsonOf(inviteListSchema, "The invitations") }, 400),
  }),
  invite: operation("post", "/api/v1/invites", {
    tags: ["People"],
    summary: "Invite someone by e-mail",
    requestBody: body(inviteBodySchema),
    responses: authed({ "201": jsonOf(inviteSchema, "The invitation, with its link (shown this once)") }, 400, 409),
  }),
  revokeInvite: operation("delete", "/api/v1/invites/{id}", {
    tags: ["People"],
    summary: "Revoke a pending invitation (its link stops working)",
    requestParams: { path: idPath("The invitation") },
    responses: authed({ "204": noContent }, 404, 409),
  }),
  acceptInvite: operation("post", "/api/v1/invites/accept", {
    tags: ["People"],
    summary:
      "Use an invitation: signed in as its invitee ({ token }), or without a session ({ token, name, password }: a new account; an e-mail that already has one gets the same answer and must sign in first)",
    security: [],
    requestBody: body(acceptInviteSchema),
    responses: answers(
      { "200": jsonOf(acceptedInviteSchema, "The account's e-mail, to sign in with") },
      400,
      404,
      410,
      429,
    ),
  }),
};

export const peopleApi: ApiDescription = {
  tags: [{ name: "People" }, { name: "API tokens" }, { name: "Account" }],
  operations: Object.values(peopleOperations),
};

/** One entry per response schema; `tsc` reports the first that is not `true`. */
export const peopleSchemasMatchTheirTypes: {
  invite: Same<Out<typeof inviteSchema>, Ret<typeof inviteUser>>;
  invites: Same<Out<typeof inviteListSchema>, { invites: Ret<typeof listInvites> }>;
  accepted: Same<Out<typeof acceptedInviteSchema>, Ret<typeof acceptInvite>>;
  member: Same<Out<typeof memberSchema>, Ret<typeof changeMemberRole>>;
  members: Same<Out<typeof memberListSchema>, { members: Ret<typeof listMembers> }>;
  tokens: Same<Out<typeof tokenListSchema>, { tokens: Ret<typeof listApiTokens> }>;
  createdToken: Same<Out<typeof createdTokenSchema>, Ret<typeof createApiToken>>;
} = {
  invite: true,
  invites: true,
  accepted: true,
  member: true,
  members: true,
  tokens: true,
  createdToken: true,
};
