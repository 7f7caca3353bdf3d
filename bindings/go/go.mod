module kvrt

go 1.19
