module kvrt-example-prefix-cache

go 1.19

require kvrt v0.3.2

replace kvrt => ../../bindings/go
