/** What `agent-server --help` prints. */
export const HELP = `agent-server: the command-line client of the agent server

Usage:
  agent-server run [options] "<prompt>"    start a run and follow it to its end
  agent-server run [options] -             the same, the prompt read from stdin
  agent-server --help | --version
A prompt that starts with - goes after --: agent-server run -- "-v means verbose?"

The answer streams to stdout; the session and run ids, tool activity, approvals and
the outcome go to stderr (one line each). A tool call that needs approval is asked on
the terminal (stdin and stderr); without one (a pipe, CI) it is denied unless
--approve allows it.
Ctrl-C cancels the run and waits for its end; a second Ctrl-C leaves at once.

Options:
  -s, --session <id>       run in this session (default: create a new one)
  -a, --approve <tools>    approve these tools' calls without asking: names separated
                           by commas (each a tool of the server's), or "all"
                           (may be repeated)
      --json               print every event as a JSON line on stdout instead of the text
      --max-turns <n>      the run's turn budget (1-1000; the server's default otherwise)
      --system <text>      the new session's system prompt
      --model <name>       the new session's model
      --workspace <name>   the new session's shared workspace (by name)
  -h, --help               this help
  -V, --version            the client's version

Environment:
  AGENT_URL        the server (default http://127.0.0.1:3000)
  AGENT_API_KEY    a bearer key, when the server sets AGENT_API_KEYS
  AGENT_MAX_ANSWER_MIB  the most of one answer or event read, in MiB (default 128)

Exit codes:
  0 complete, 1 error, 2 max_turns, 3 loop_detected or budget_exhausted, 130 aborted;
  64 bad command line, 65 bad AGENT_URL, AGENT_API_KEY or AGENT_MAX_ANSWER_MIB, 66 server unreachable,
  67 API key missing or refused (or the request forbidden), 68 session busy, 69 server full or shutting down
  (retry later), 70 any other refusal or failure of the server
`;
