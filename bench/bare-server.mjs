// The bare baseline, in its own plain-node process: a Fastify POST route that parses the same JSON body and looks
// the key up in a Map. No TypeScript loader, no logger, nothing else. Usage: node bench/bare-server.mjs <port> <key>
import Fastify from 'fastify';

const [port, key] = process.argv.slice(2);
const table = new Map([[key, { valid: true }]]);
const app = Fastify();
app.post('/bare', async (request) => ({ result: table.get(request.body.key)?.valid === true, error: null }));
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ port: Number(port), host: '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
