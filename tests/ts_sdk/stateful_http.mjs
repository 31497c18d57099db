// Stateful Streamable HTTP for the probe's TypeScript SDK servers, as the SDK's example
// (examples/server/simpleStreamableHttp) serves it: one transport per session, kept in a map by
// session id; a POST without a known session must be an initialize, which makes a transport and
// connects a fresh server from getServer(); GET and DELETE go to the session's transport.
// Prints "listening on http://127.0.0.1:PORT/mcp" once it accepts connections.
import { randomUUID } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

export const sessionRoutes = (app, getServer) => {
  const transports = {};
  app.post('/mcp', async (req, res) => {
    const sessionId = req.headers['mcp-session-id'];
    let transport = sessionId ? transports[sessionId] : undefined;
    if (!transport) {
      if (sessionId || !isInitializeRequest(req.body)) {
        res.status(400).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' }, id: null });
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => {
          transports[sid] = transport;
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) delete transports[transport.sessionId];
      };
      await getServer().connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  });
  const bySession = async (req, res) => {
    const transport = transports[req.headers['mcp-session-id']];
    if (!transport) {
      res.status(400).send('Invalid or missing session ID');
      return;
    }
    await transport.handleRequest(req, res);
  };
  app.get('/mcp', bySession);
  app.delete('/mcp', bySession);
};

export const listen = (app, port) => {
  const listener = app.listen(port, '127.0.0.1', () => {
    console.log(`listening on http://127.0.0.1:${listener.address().port}/mcp`);
  });
  return listener;
};
