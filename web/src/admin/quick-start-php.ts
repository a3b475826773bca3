// The PHP entry of Developers → SDK quick start: a plain PHP script guarded by the PHP SDK (packages/sdk-php), with
// this instance's base URL. test/processes/sdk-php.test.ts serves it with `php -S` against a real Tollgate, as printed.

/** [heading, language, code] like the other quick starts. */
export function phpQuickStart(baseUrl: string): [string, string, string] {
  return [
    'PHP',
    'php',
    `<?php
// composer require tollgate/sdk (the Tollgate repository's packages/sdk-php; PSR-15 and Laravel middleware in its README)
require __DIR__ . '/vendor/autoload.php';

$tollgate = new \\Tollgate\\Client('${baseUrl}', getenv('TOLLGATE_VERIFIER_TOKEN'));
$result = \\Tollgate\\guard($tollgate); // answers 401, 429 or 503 itself and ends the script
header('Content-Type: application/json');
echo json_encode(['tier' => $result->config['tier'] ?? null]);`,
  ];
}
