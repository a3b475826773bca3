<?php

declare(strict_types=1);

/*
 * For apps without Composer: `require '/path/to/sdk-php/autoload.php';` loads the Tollgate\ classes from src/ (PSR-4,
 * as composer.json declares) and the guard() function. With Composer, its own autoloader does both.
 */
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Tollgate\\')) {
        $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen('Tollgate\\'))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
require_once __DIR__ . '/src/functions.php';
