module kvrt-example-prefix-cache

go 1.19

require kvrt v0.3.3

replace kvrt => ../../bindings/go
