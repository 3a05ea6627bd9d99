// GET /docs/api/scalar.js – the API reference's renderer (Scalar's standalone bundle from node_modules), served from our origin
import { scalarBundle } from "@/lib/http/api-reference";
import { publicRoute } from "@/lib/http/route";

export const GET = publicRoute(
  async () => {
    const { body, version } = await scalarBundle();
    return new Response(new Uint8Array(body), {
      headers: {
        "Content-Type": "text/javascript; charset=utf-8",
        "Cache-Control": "public, max-age=86400",
        ETag: `"scalar-${version}"`,
      },
    });
  },
  { perAddress: true },
);
