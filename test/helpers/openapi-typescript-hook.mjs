// Registers a module-resolution hook (node --import) under which openapi-typescript finds a
// TypeScript with the compiler API: the project's own TypeScript (7, native) has none, so
// openapi-typescript is given the copy of TypeScript that @ts-morph/common ships.
import { register } from "node:module";

register(
  "data:text/javascript," +
    encodeURIComponent(`
const typescript = ${JSON.stringify(new URL("../../node_modules/@ts-morph/common/dist/typescript.js", import.meta.url).href)};
export async function resolve(specifier, context, next) {
  if (specifier === "typescript" && context.parentURL?.includes("/node_modules/openapi-typescript/")) {
    return { url: typescript, format: "commonjs", shortCircuit: true };
  }
  return next(specifier, context);
}`),
);
