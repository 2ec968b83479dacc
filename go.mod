module github.com/heedcrawl/heed

go 1.26.0

require (
	github.com/PuerkitoBio/goquery v1.13.0 // indirect
	github.com/andybalholm/brotli v1.2.8 // indirect
	github.com/andybalholm/cascadia v1.3.4 // indirect
	github.com/temoto/robotstxt v1.1.2 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
