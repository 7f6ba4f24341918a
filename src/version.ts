/**
 * The package's version, as `splitfleet_build_info{version}` reports it. Kept
 * equal to package.json's by test/unit/coordinator/metrics-options.test.ts (a
 * constant, not a read of package.json: the compiled file sits at a different
 * depth than the source one).
 */
export const VERSION = '0.2.0';
