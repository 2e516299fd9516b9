import Fastify from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { schemaController } from "../../src/http/schema-compilers.js";

const apps: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

function makeApp() {
  const app = Fastify({ schemaController }).withTypeProvider<ZodTypeProvider>();
  apps.push(app);
  return app;
}

describe("the server's schema compilers", () => {
  it("validate a route's body with its zod schema: a bad body is refused before the handler runs", async () => {
    const app = makeApp();
    let handled = 0;
    app.post("/echo", { schema: { body: z.object({ name: z.string().min(1) }) } }, async (request) => {
      handled++;
      return { name: request.body.name };
    });
    const good = await app.inject({ method: "POST", url: "/echo", payload: { name: "a" } });
    expect(good.statusCode).toBe(200);
    expect(good.json()).toEqual({ name: "a" });
    const bad = await app.inject({ method: "POST", url: "/echo", payload: { name: "" } });
    expect(bad.statusCode).toBe(400);
    expect(handled).toBe(1);
  });

  it("refuse a route that declares a response schema when the app is readied, saying answers are not serialized by schema", async () => {
    const app = makeApp();
    app.get("/typed", { schema: { response: { 200: z.object({ ok: z.boolean() }) } } }, async () => ({ ok: true }));
    await expect(app.ready()).rejects.toThrow(/no route declares a response schema/);
  });
});
