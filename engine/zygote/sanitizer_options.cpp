// Sanitizer builds only. The zygote exits without finalising its embedded interpreter (every run
// inherits that interpreter; finalising would only cost time), so LeakSanitizer would report the
// whole interpreter heap at each zygote exit and bury real findings in CI logs. The server and the
// unit tests keep leak checking.
extern "C" const char* __lsan_default_options();
extern "C" const char* __lsan_default_options() { return "detect_leaks=0"; }
