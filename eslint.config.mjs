import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

// The arrows go one way: app → lib ← worker.
const libBoundary = {
  patterns: [
    {
      group: ["@/app/*", "@/worker/*", "**/app/*", "**/worker/*"],
      message: "lib/ never imports app/ or worker/ (app → lib ← worker).",
    },
    {
      group: ["next", "next/*", "next-auth", "next-auth/*"],
      message: "Only lib/http/ may import Next.js; the worker imports lib/ too.",
    },
  ],
};

export default defineConfig(
  {
    ignores: [
      "node_modules/",
      ".next/",
      "dist/",
      ".data/",
      "lib/generated/",
      "next-env.d.ts",
      "test-results/",
      "playwright-report/",
    ],
  },
  js.configs.recommended,
  {
    files: ["**/*.cjs"],
    languageOptions: {
      sourceType: "commonjs",
      globals: { module: "writable", require: "readonly", process: "readonly", console: "readonly" },
    },
  },
  tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  { files: ["lib/**/*.ts"], ignores: ["lib/http/**"], rules: { "no-restricted-imports": ["error", libBoundary] } },
  {
    files: ["lib/http/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { patterns: [libBoundary.patterns[0]] }] },
  },
  {
    files: ["worker/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["@/app/*", "**/app/*", "@/lib/http/*", "**/lib/http/*", "next", "next/*"],
              message: "worker/ uses lib/ only (not app/, lib/http or Next.js).",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["app/**/*.{ts,tsx}", "components/**/*.{ts,tsx}"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ group: ["@/worker/*", "**/worker/*"], message: "app/ never imports worker/." }] },
      ],
    },
  },
);
