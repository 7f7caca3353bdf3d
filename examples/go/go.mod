module kvrt-example-prefix-cache

go 1.19

require kvrt v0.5.0

replace kvrt => ../../bindings/go
