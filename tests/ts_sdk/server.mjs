// An MCP server on the official TypeScript SDK (pinned in package.json), written the way the
// SDK's examples are (examples/server/simpleStatelessStreamableHttp and
// simpleStreamableHttp): for mcp-inflight's probe.
//
// node server.mjs [--stateless] [--port N]
//   stateful (default): sessions, one transport per session, kept in a map by session id
//   (stateful_http.mjs, shared with task_server.mjs);
//   --stateless: a new McpServer and transport for every POST (sessionIdGenerator undefined).
// Prints "listening on http://127.0.0.1:PORT/mcp" once it accepts connections.
//
// Tools: slow {label, steps, delay} (progress for the caller's token on each step), ask
// {label, delay} (elicits after the delay), and the probe's fixture contract: slow records what
// became of each call by label, probe_outcome {label} tells it (see
// mcp_inflight/fixtures/contract.py). Nothing here works around the SDK.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';
import { listen, sessionRoutes } from './stateful_http.mjs';

const args = process.argv.slice(2);
const stateless = args.includes('--stateless');
const portAt = args.indexOf('--port');
const port = portAt >= 0 ? Number(args[portAt + 1]) : 0;

const calls = new Map(); // label -> {label, state, steps, sentAfterCancel}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const getServer = () => {
  const server = new McpServer({ name: 'ts-sdk-probe-target', version: '1.0.0' }, { capabilities: { logging: {} } });

  server.registerTool(
    'slow',
    {
      description: 'Report progress on each step; stop when cancelled; answer done:<label>',
      inputSchema: { label: z.string(), steps: z.number().default(5), delay: z.number().default(0.2) },
    },
    async ({ label, steps, delay }, extra) => {
      const call = { label, state: 'running', steps: 0, sentAfterCancel: 0 };
      calls.set(label, call);
      const token = extra._meta?.progressToken;
      try {
        for (let k = 1; k <= steps; k++) {
          await sleep(delay * 1000);
          if (extra.signal.aborted) {
            call.state = 'cancelled';
            return { content: [{ type: 'text', text: `cancelled:${label}` }] };
          }
          if (token !== undefined) {
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: k, total: steps, message: `${label} step ${k}/${steps}` },
            });
          }
          call.steps += 1;
          if (extra.signal.aborted) call.sentAfterCancel += 1;
        }
      } catch (error) {
        call.state = extra.signal.aborted ? 'cancelled' : 'failed';
        throw error;
      }
      call.state = 'completed';
      return { content: [{ type: 'text', text: `done:${label}` }] };
    }
  );

  server.registerTool(
    'ask',
    { description: 'Wait, then elicit', inputSchema: { label: z.string(), delay: z.number().default(0.5) } },
    async ({ label, delay }, extra) => {
      await sleep(delay * 1000);
      const answer = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: { message: `${label}: go on?`, requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } },
        },
        ElicitResultSchema
      );
      return { content: [{ type: 'text', text: `ask:${label}:${answer.action}` }] };
    }
  );

  server.registerTool(
    'probe_outcome',
    { description: 'What became of the slow call with this label (JSON)', inputSchema: { label: z.string() } },
    async ({ label }) => {
      const call = calls.get(label) ?? { label, state: 'unknown', steps: 0, sentAfterCancel: 0 };
      return { content: [{ type: 'text', text: JSON.stringify(call) }] };
    }
  );
  return server;
};

const app = createMcpExpressApp();

if (stateless) {
  app.post('/mcp', async (req, res) => {
    const server = getServer();
    try {
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
      res.on('close', () => {
        transport.close();
        server.close();
      });
    } catch (error) {
      if (!res.headersSent) {
        res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null });
      }
    }
  });
} else {
  sessionRoutes(app, getServer);
}

listen(app, port);
