// Developers → SDK quick start, the Python part (packages/sdk-python): a Flask app and a FastAPI app guarded by the SDK,
// with this instance's base URL. Plain strings with no imports, so test/processes/sdk-python.test.ts runs these very
// snippets as servers against a real Tollgate: what the page shows is what is tested.

/** The Python snippets for one base URL: [heading, language, code]. */
export function pythonQuickStarts(baseUrl: string): Array<[string, string, string]> {
  const client = `tollgate = Tollgate('${baseUrl}', os.environ['TOLLGATE_VERIFIER_TOKEN'])`;
  return [
    [
      'Python (Flask)',
      'python',
      `import os
from flask import Flask, request
from tollgate import Tollgate, TollgateWSGI

${client}
app = Flask(__name__)
app.wsgi_app = TollgateWSGI(app.wsgi_app, tollgate)

@app.get('/data')
def data():
    return {'tier': request.environ['tollgate'].config.get('tier')}`,
    ],
    [
      'Python (FastAPI)',
      'python',
      `import os
from fastapi import FastAPI, Request
from tollgate import Tollgate, TollgateASGI

${client}
app = FastAPI()
app.add_middleware(TollgateASGI, tollgate=tollgate)

@app.get('/data')
async def data(request: Request):
    return {'tier': request.state.tollgate.config.get('tier')}`,
    ],
  ];
}
