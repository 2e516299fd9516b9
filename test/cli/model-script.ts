import type { FakeReply } from "../fakes/openai-upstream.js";

/**
 * The fake model of the client's tests and README examples: what it answers depends on
 * the run's input and on the tool results that came back since it.
 */
// biome-ignore lint/suspicious/noExplicitAny: the request body the client sent.
export function cliModel(body: any): FakeReply {
  const messages: Array<{ role: string; content: unknown }> = body.messages;
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  const input = String(messages[lastUser]?.content ?? "");
  const results = messages.slice(lastUser + 1).filter((m) => m.role === "tool");
  const result = String(results[0]?.content ?? "");
  const call = (id: string, name: string, args: unknown, text?: string): FakeReply => ({
    text,
    toolCalls: [{ id, name, arguments: JSON.stringify(args) }],
  });
  switch (input) {
    case "What files are in the workspace?":
      if (!results.length) return call("call_list", "list_files", {}, "Let me look.");
      return { text: result.includes("hello.txt") ? "There is hello.txt." : ["The workspace ", "is empty."] };
    case "Create hello.txt saying hello, world":
      if (!results.length) return call("call_write", "write_file", { path: "hello.txt", content: "hello, world\n" });
      return { text: result.startsWith("tool call denied") ? "I was not allowed to create it." : "Created hello.txt." };
    case "What does hello.txt say?":
      if (!results.length) return call("call_read", "read_file", { path: "hello.txt" });
      return { text: result.includes("hello, world") ? 'It says "hello, world".' : "I could not read it." };
    case "Run the test suite":
      return results.length ? { text: "The tests did not run." } : call("call_shell", "shell", { command: "npm test" });
    case "Fail":
      return { status: 400, errorBody: { error: { message: "this model refuses", type: "invalid_request_error" } } };
    default:
      return { text: `You said: ${input}` };
  }
}
