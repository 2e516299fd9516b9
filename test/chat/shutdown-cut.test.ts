/**
 * A server shutting down while `useChat` streams an answer (driven by the AI SDK's own chat
 * client): the run is left to resume after the restart, so the page must see its stream
 * broken, not the answer complete. A clean end of the stream is, for the SDK, the answer's end.
 */
import { expect, it } from "vitest";
import { gate } from "../fakes/gate.js";
import { startFakeUpstream } from "../fakes/openai-upstream.js";
import { assistant, NodeChat, texts, until } from "../helpers/node-chat.js";
import { startTestServer } from "../helpers/test-server.js";

it("a shutdown mid-answer breaks the chat's stream: the page is not told the answer is complete", async () => {
  const upstream = await startFakeUpstream();
  const server = await startTestServer({ upstream, env: { ON_RESTART: "resume" } });
  const hold = gate();
  try {
    upstream.enqueue({ text: ["half ", "an answer"], gate: hold.wait });
    const session = await server.request("POST", "/sessions", { body: {} });
    let finished: { isError: boolean; isDisconnect: boolean } | undefined;
    const chat = new NodeChat(`${server.url}/sessions/${session.body.id}/chat`, {
      onFinish: ({ isError, isDisconnect }) => {
        finished = { isError, isDisconnect };
      },
    });
    void chat.sendMessage({ text: "go" });
    await until("streamed text", () => texts(assistant(chat)).startsWith("half"));
    const closing = server.close({ resume: true });
    await until("the stream's end", () => chat.status !== "streaming", 8000);
    hold.open();
    await closing;
    expect(chat.status).toBe("error");
    expect(finished?.isError || finished?.isDisconnect).toBe(true);
  } finally {
    hold.open();
    await upstream.close();
  }
});
