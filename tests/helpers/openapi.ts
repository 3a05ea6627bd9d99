/**
 * Checking a response against the OpenAPI document: find the operation a
 * request's path answers to, and validate its body with the schema documented
 * for its status (JSON Schema 2020-12, as OpenAPI 3.1 uses, by Ajv).
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";

/** An OpenAPI document (as built, or as parsed from JSON). */
type Doc = object;
type Paths = Record<string, Record<string, unknown>>;
const pathsOf = (doc: Doc): Paths => (doc as { paths?: Paths }).paths ?? {};
type Operation = { responses?: Record<string, { content?: Record<string, { schema?: unknown }> }> };

const DOC_ID = "openapi.json";
const compilers = new WeakMap<object, { ajv: Ajv2020; cache: Map<string, ValidateFunction | undefined> }>();

function compilerFor(doc: Doc) {
  let c = compilers.get(doc);
  if (!c) {
    // Not strict: OpenAPI's own keywords (example, discriminator…) sit beside JSON Schema's.
    const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false });
    addFormats(ajv);
    ajv.addFormat("binary", true);
    ajv.addSchema(doc, DOC_ID);
    c = { ajv, cache: new Map() };
    compilers.set(doc, c);
  }
  return c;
}

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");

/** The JSON response status a documented operation answers with `status`, else its `default`, else none. */
export function documentedStatus(doc: Doc, docPath: string, method: string, status: string): string | undefined {
  const op = pathsOf(doc)[docPath]?.[method.toLowerCase()] as Operation | undefined;
  if (!op?.responses) return undefined;
  if (status in op.responses) return status;
  if (`${status[0]}XX` in op.responses) return `${status[0]}XX`;
  return "default" in op.responses ? "default" : undefined;
}

/**
 * A validator of the JSON body documented for (path, method, status); undefined
 * when that answer has no JSON body. Throws when the status is not documented.
 */
export function compileResponseValidator(
  doc: Doc,
  docPath: string,
  method: string,
  status: string,
): ValidateFunction | undefined {
  const key = documentedStatus(doc, docPath, method, status);
  if (!key) throw new Error(`${method.toUpperCase()} ${docPath}: status ${status} is not documented`);
  const { ajv, cache } = compilerFor(doc);
  const cacheKey = `${method} ${docPath} ${key}`;
  if (cache.has(cacheKey)) return cache.get(cacheKey);
  const op = pathsOf(doc)[docPath]![method.toLowerCase()] as Operation;
  const json = op.responses![key]!.content?.["application/json"];
  const validate = json?.schema
    ? ajv.compile({
        $ref: `${DOC_ID}#/${pointer("paths", docPath, method.toLowerCase(), "responses", key, "content", "application/json", "schema")}`,
      })
    : undefined;
  cache.set(cacheKey, validate);
  return validate;
}

/** The document path (`/api/v1/jobs/{id}`) a request path answers to: literal segments win over parameters. */
export function matchDocumentPath(doc: Doc, requestPath: string): string | undefined {
  const candidates = Object.keys(pathsOf(doc))
    .map((p) => ({
      p,
      params: (p.match(/\{/g) ?? []).length,
      re: new RegExp(`^${p.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{\w+\\?\}/g, "[^/]+")}$`),
    }))
    .filter((c) => c.re.test(requestPath))
    .sort((a, b) => a.params - b.params);
  return candidates[0]?.p;
}
