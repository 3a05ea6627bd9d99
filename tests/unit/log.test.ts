import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { resetEnvCache } from "@/lib/env";
import { requestIdOf } from "@/lib/http/route";
import { logFormat, scrubSecrets, serializeError } from "@/lib/log";

const saved = { NODE_ENV: process.env.NODE_ENV, LOG_FORMAT: process.env.LOG_FORMAT };
afterEach(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  resetEnvCache();
});

test("JSON in production, readable elsewhere, unless LOG_FORMAT says", () => {
  const formatWith = (vars: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(vars)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    resetEnvCache();
    return logFormat();
  };
  assert.equal(formatWith({ NODE_ENV: "production", LOG_FORMAT: undefined }), "json");
  assert.equal(formatWith({ NODE_ENV: "development", LOG_FORMAT: undefined }), "pretty");
  assert.equal(formatWith({ NODE_ENV: "test", LOG_FORMAT: undefined }), "pretty");
  assert.equal(formatWith({ NODE_ENV: "development", LOG_FORMAT: "json" }), "json");
  assert.equal(formatWith({ NODE_ENV: "production", LOG_FORMAT: "pretty" }), "pretty");
  assert.throws(() => formatWith({ LOG_FORMAT: "xml" }), /LOG_FORMAT/);
});

test("secrets are scrubbed from messages: URL passwords, bearer and basic credentials, API tokens, webhook secrets", () => {
  const cases: [string, string][] = [
    ["postgresql://app:s3cr%40t@db:5432/x", "postgresql://app:[Redacted]@db:5432/x"],
    ["smtp://mailer:pw@smtp.example.com:587", "smtp://mailer:[Redacted]@smtp.example.com:587"],
    ["Authorization: Bearer abc.DEF-123_~+/=", "Authorization: Bearer [Redacted]"],
    ["Basic dXNlcjpwYXNz", "Basic [Redacted]"],
    ["bearer abcdefgh12", "bearer [Redacted]"],
    ["token cvy_K8i0kGzoHMN9x2pf95ayF36d7x9SP2T6ziBg09V6UCw refused", "token cvy_[Redacted] refused"],
    ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_[Redacted]"],
    // Base64, whole: `+`, `/` and the padding are the secret too.
    ["secret whsec_Mf+Q9r8G/YqrTwjUPD8ILP+Io2La/aSwAbCdEfGh1jk= rotated", "secret whsec_[Redacted] rotated"],
    ["GET /d/dl_x3Kq9_-AbCdEf 200", "GET /d/dl_[Redacted] 200"],
  ];
  for (const [raw, scrubbed] of cases) assert.equal(scrubSecrets(raw), scrubbed);
  // What is no secret stays readable.
  const plain = "[task:export] job 01a2: a basic export succeeded in 12 ms; see https://example.com/docs";
  assert.equal(scrubSecrets(plain), plain);
});

test("an error is logged as type, message, code, stack and cause: never a database error's detail or Prisma's meta", () => {
  const cause = Object.assign(new Error("connect to postgresql://u:pw@h/db failed"), { code: "ECONNREFUSED" });
  const err = Object.assign(new Error("duplicate key value violates unique constraint", { cause }), {
    code: "23505",
    detail: "Key (email)=(someone@example.com) already exists.",
    meta: { target: ["email"], parameters: ["someone@example.com"] },
  });
  const out = serializeError(err);
  assert.deepEqual(Object.keys(out).sort(), ["cause", "code", "message", "stack", "type"]);
  assert.equal(out.code, "23505");
  assert.ok(!JSON.stringify(out).includes("someone@example.com"));
  assert.match(JSON.stringify(out.cause), /postgresql:\/\/u:\[Redacted\]@h/);
  assert.deepEqual(serializeError("plain text"), { message: "plain text" });
});

test("a request id: a sane X-Request-Id is kept, anything else replaced by a UUID", () => {
  const withId = (id?: string) =>
    requestIdOf(new Request("http://test/api/v1/jobs", id === undefined ? {} : { headers: { "X-Request-Id": id } }));
  assert.equal(withId("req-42"), "req-42");
  assert.equal(withId("Root=1-67891233-abcdef012345678912345678"), "Root=1-67891233-abcdef012345678912345678");
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  for (const bad of [undefined, "", "has space", 'quote"d', "x".repeat(129), "<script>"])
    assert.match(withId(bad), uuid);
  assert.notEqual(withId(), withId(), "a new id for each request");
});
