# Builds the gateway as a static binary (SQLite is pure Go: no cgo).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/gateway ./cmd/gateway

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gateway /gateway
COPY fixtures /fixtures
EXPOSE 8080
ENTRYPOINT ["/gateway"]
CMD ["serve", "--listen", "0.0.0.0:8080"]
