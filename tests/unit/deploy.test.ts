/**
 * The deploy files (Dockerfile, compose.yaml), checked by reading: no image can
 * be built where the tests run. Every environment variable they set is one
 * lib/env.ts or a workload's settings read (or one the named third-party image or tool reads), the
 * values they give parse, every queue has a worker pool, the entry points
 * and files they name exist, and nothing the image runs needs a devDependency.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import { env, resetEnvCache } from "@/lib/env";
import { checkSettings, queueNames, settingKeys } from "@/lib/jobs/registry";
import "@/lib/workloads";

const root = path.resolve(__dirname, "../..");
const read = (file: string) => readFileSync(path.join(root, file), "utf8");

/** Variables read by something else than lib/env.ts, and by what. */
const THIRD_PARTY: { pattern: RegExp; reader: string }[] = [
  { pattern: /^NEXT_TELEMETRY_DISABLED$/, reader: "Next.js (no usage data sent from the build or the server)" },
  { pattern: /^POSTGRES_(USER|PASSWORD|DB)$/, reader: "the postgres image" },
  { pattern: /^MINIO_ROOT_(USER|PASSWORD)$/, reader: "the minio image" },
  { pattern: /^MC_HOST_\w+$/, reader: "the mc client (minio/mc image)" },
];
const known = (key: string) => settingKeys().includes(key) || THIRD_PARTY.some((t) => t.pattern.test(key));

type Service = {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string | number | boolean> | string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  user?: string;
};

function compose(): Record<string, Service> {
  // merge: the file shares settings between services with YAML anchors and `<<` merge keys.
  const doc = parse(read("compose.yaml"), { merge: true }) as { services: Record<string, Service> };
  return doc.services;
}

function environment(service: Service): Record<string, string> {
  const out: Record<string, string> = {};
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    for (const entry of env) {
      const i = entry.indexOf("=");
      out[i < 0 ? entry : entry.slice(0, i)] = i < 0 ? "" : entry.slice(i + 1);
    }
  } else {
    for (const [k, v] of Object.entries(env)) out[k] = String(v);
  }
  return out;
}

/** `${NAME:?message}` and `${NAME:-default}`: what compose fills in from the host's environment (a URL for a `*_URL`). */
function interpolate(value: string): string {
  return value.replace(/\$\{(\w+)(?::[?-]([^}]*))?\}/g, (_m, name: string, rest?: string) =>
    rest !== undefined && _m.includes(":-")
      ? rest
      : name.endsWith("_URL")
        ? `smtp://${name.toLowerCase().replace(/_/g, "-")}.example:587`
        : `${name.toLowerCase()}-value-0123456789abcdef`,
  );
}

const isConveyor = (s: Service) => s.image?.startsWith("conveyor") ?? false;

/** The Dockerfile's ENV instructions (both `ENV K=V K2=V2` and the old `ENV K V`), continuation lines joined. */
function dockerfileEnv(): Record<string, string> {
  const lines = read("Dockerfile")
    .replace(/\\\n/g, " ")
    .split("\n")
    .filter((l) => /^\s*ENV\s/i.test(l));
  const out: Record<string, string> = {};
  for (const line of lines) {
    const body = line.replace(/^\s*ENV\s+/i, "").trim();
    if (!body.includes("=")) {
      const [k, ...v] = body.split(/\s+/);
      out[k!] = v.join(" ");
      continue;
    }
    for (const m of body.matchAll(/(\w+)=("[^"]*"|\S*)/g)) out[m[1]!] = m[2]!.replace(/^"|"$/g, "");
  }
  return out;
}

test("every environment variable the Dockerfile and compose.yaml set is one lib/env.ts reads", () => {
  const set: string[] = Object.keys(dockerfileEnv()).map((k) => `Dockerfile: ${k}`);
  for (const [name, service] of Object.entries(compose())) {
    for (const key of Object.keys(environment(service))) set.push(`compose.yaml ${name}: ${key}`);
  }
  assert.ok(set.length > 20, "the files were read");
  const unknown = set.filter((entry) => !known(entry.split(": ")[1]!));
  assert.deepEqual(unknown, [], "set but read by nothing (a typo, or add it to lib/env.ts)");
});

test("the values compose.yaml gives each Conveyor service pass lib/env.ts's checks", () => {
  const saved = { ...process.env };
  try {
    for (const [name, service] of Object.entries(compose()).filter(([, s]) => isConveyor(s))) {
      for (const key of Object.keys(process.env)) delete process.env[key];
      Object.assign(process.env, dockerfileEnv());
      for (const [k, v] of Object.entries(environment(service))) process.env[k] = interpolate(v);
      resetEnvCache();
      assert.doesNotThrow(() => env(), `${name}'s configuration`);
      assert.doesNotThrow(() => checkSettings(), `${name}'s workloads' configuration`);
      if (name !== "migrate") {
        assert.equal(env().STORAGE_DRIVER, "s3", `${name} keeps files in MinIO, not on its own disk`);
        assert.ok(env().AUTH_SECRET && env().METRICS_TOKEN, `${name} gets the secrets`);
      }
    }
  } finally {
    for (const key of Object.keys(process.env)) delete process.env[key];
    Object.assign(process.env, saved);
    resetEnvCache();
  }
});

test("compose.yaml: two app servers, a pool for every queue, and nothing starts before the migration", () => {
  const services = compose();
  const conveyor = Object.entries(services).filter(([, s]) => isConveyor(s));
  const apps = conveyor.filter(([, s]) => s.command?.join(" ") === "node web/serve.js");
  assert.equal(apps.length, 2);
  // `npm start` listens on 127.0.0.1 only; the image and the app servers, whose ports are published, on every interface.
  assert.equal(dockerfileEnv().HOST, "0.0.0.0");
  for (const [name, app] of apps) assert.equal(environment(app).HOST, "0.0.0.0", name);
  for (const [, app] of apps) assert.match(app.healthcheck!.test.join(" "), /\/api\/health/);
  assert.ok(existsSync(path.join(root, "app/api/health/route.ts")));

  const workers = conveyor.filter(([, s]) => s.command?.includes("dist/worker.js"));
  const served = workers.flatMap(([, s]) => environment(s).WORKER_QUEUES!.split(","));
  assert.deepEqual([...served].sort(), [...queueNames()].sort(), "each queue served by exactly one pool");
  assert.ok(workers.some(([, s]) => environment(s).WORKER_QUEUES === "interactive"));
  assert.ok(workers.some(([, s]) => environment(s).WORKER_QUEUES === "bulk"));

  const migrate = services.migrate!;
  assert.deepEqual(migrate.command, ["node", "--import", "tsx", "scripts/migrate.ts"]);
  for (const [name, service] of conveyor.filter(([n]) => n !== "migrate")) {
    assert.equal(service.depends_on?.migrate?.condition, "service_completed_successfully", name);
  }
  // The entry points the commands name exist (web/serve.js is scripts/serve.ts and dist/worker.js is
  // worker/index.ts, both bundled by the Dockerfile).
  for (const file of ["worker/index.ts", "scripts/migrate.ts", "scripts/serve.ts", "scripts/cli.ts"]) {
    assert.ok(existsSync(path.join(root, file)), file);
  }
});

test("compose.yaml: invitations go by SMTP, third-party images are pinned, and Conveyor's S3 key is not MinIO's root", () => {
  const services = compose();
  for (const [name, service] of Object.entries(services).filter(([n, s]) => isConveyor(s) && n !== "migrate")) {
    const vars = environment(service);
    // The log transport writes every invitation link into the logs.
    assert.equal(vars.MAIL_TRANSPORT, "smtp", `${name} mails invitations`);
    assert.match(vars.SMTP_URL ?? "", /^\$\{SMTP_URL:\?/, `${name} takes SMTP_URL from the host`);
  }
  for (const [name, service] of Object.entries(services).filter(([, s]) => !isConveyor(s))) {
    const tag = service.image?.split(":")[1] ?? "";
    assert.match(
      tag,
      /^(RELEASE\.\d{4}-|\d+\.\d+)/,
      `${name}: ${service.image} names a release, not latest or a major`,
    );
  }
  const minio = environment(services.minio!);
  for (const [name, service] of Object.entries(services).filter(([n, s]) => isConveyor(s) && n !== "migrate")) {
    const vars = environment(service);
    assert.notEqual(vars.S3_ACCESS_KEY_ID, minio.MINIO_ROOT_USER, `${name}'s S3 key is not the root user`);
    assert.doesNotMatch(vars.S3_SECRET_ACCESS_KEY ?? "", /MINIO_ROOT_PASSWORD/, `${name}'s S3 secret is its own`);
  }
  // The key is made, limited to the bucket, by the one-off that makes the bucket.
  const bucket = (services["minio-bucket"]!.command ?? []).join("\n");
  assert.match(bucket, /mc admin user add local conveyor /);
  assert.match(bucket, /arn:aws:s3:::conveyor\/\*/);
  assert.match(bucket, /mc admin policy attach local conveyor-bucket --user conveyor/);
});

test("the Dockerfile: multi-stage, the app from Next's standalone output, run by a user who is not root", () => {
  const text = read("Dockerfile");
  const stages = [...text.matchAll(/^FROM\s+\S+(?:\s+AS\s+(\S+))?/gim)].map((m) => m[1]);
  assert.ok(stages.length >= 3, "deps, build and runtime stages");
  const runtime = text.slice(text.lastIndexOf("\nFROM "));
  const user = runtime.match(/^USER\s+(\S+)/m)?.[1];
  assert.ok(user && user !== "root" && user !== "0", "the runtime stage switches to an unprivileged user");
  assert.match(runtime, /COPY --from=build \/app\/\.next\/standalone \.\/web/);
  assert.match(read("next.config.ts"), /output:\s*"standalone"/);
  assert.match(runtime, /^CMD \["node", "web\/serve\.js"\]/m);
  // Workers run the bundle the build stage makes, as `npm start` runs them.
  assert.match(text, /^RUN .*scripts\/worker-build\.ts/m);
  assert.match(runtime, /COPY --from=build \/app\/dist \.\/dist/);
  // What the stages copy from the context exists (and is not ignored by .dockerignore).
  const ignored = read(".dockerignore")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  for (const m of text.matchAll(/^COPY\s+(?!--from)([^\n]+)$/gm)) {
    const sources = m[1]!.split(/\s+/).slice(0, -1);
    for (const source of sources.filter((s) => s !== ".")) {
      assert.ok(existsSync(path.join(root, source)), `${source} exists`);
      assert.ok(!ignored.includes(source), `${source} is not in .dockerignore`);
    }
  }
});

test("code the image runs imports no devDependency (the image has only the production ones)", () => {
  const pkg = JSON.parse(read("package.json")) as { devDependencies: Record<string, string> };
  const dev = new Set(Object.keys(pkg.devDependencies));
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== "generated" && entry.name !== "migrations") walk(rel);
      else if (/\.tsx?$/.test(entry.name)) files.push(rel);
    }
  };
  for (const dir of ["app", "components", "lib", "worker", "scripts", "prisma"]) walk(dir);
  files.push("proxy.ts", "prisma.config.ts");
  const offending: string[] = [];
  for (const file of files) {
    for (const line of read(file).split("\n")) {
      if (/^\s*import\s+type\b/.test(line)) continue; // erased at run time
      for (const m of line.matchAll(/(?:from\s+|import\s*\(\s*|require\(\s*)"([^".][^"]*)"/g)) {
        const spec = m[1]!;
        const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!;
        if (dev.has(name)) offending.push(`${file}: ${spec}`);
      }
    }
  }
  assert.ok(files.length > 100, "the sources were read");
  assert.deepEqual(offending, []);
});
