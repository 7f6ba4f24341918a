/**
 * The package's version, as `splitfleet_build_info{version}` reports it. Kept
 * beside package.json's by test/unit/package/version.test.ts (a constant, not a
 * read of package.json: the compiled file sits at a different depth than the
 * source one).
 */
export const VERSION = '0.1.0';
